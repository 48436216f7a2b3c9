/*
 * The per-step pointwise work of the LSTMP cell (allennlp_elmo_c/nn/lstmp.py) on CPU, float32:
 * lstmp_torch.py's functions as plain loops, one pass over memory instead of 5-15 torch
 * operators. Gate order i, f, g, o; rows contiguous; `keep` masks are bytes (torch.bool).
 *
 * The forward step rounds exactly as torch's operators do: one operation at a time (setup.py
 * passes -ffp-contract=off), with torch's own transcendental functions (`set_math`): sigmoid as
 * torch's vector kernel computes it, with SLEEF's vector expf where torch's vector loop runs and
 * glibc's expf in its scalar remainder (`sigmoid_row`), and tanh with MKL's vmsTanh. Rows are
 * split between torch's OpenMP threads (setup.py links libgomp, the copy torch has loaded).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define F(address) ((float *)(uintptr_t)(address))
#define B(address) ((uint8_t *)(uintptr_t)(address))

/* Set by set_math: a vector expf of `vector_width` lanes (0: none) and MKL's vmsTanh, called in
 * torch's mode, VML_HA | VML_FTZDAZ_OFF | VML_ERRMODE_IGNORE. */
typedef void (*vml_function)(int, const float *, float *, long long);
static void *vector_exp = NULL;
static int vector_width = 0;
static vml_function vml_tanh = NULL;
#define VML_MODE (0x2LL | 0x140000LL | 0x100LL)
#define GRAIN_SIZE 32768 /* at::internal::GRAIN_SIZE */

static inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

#if defined(__x86_64__) && defined(__GNUC__)
/* `sigmoid_vector<WIDTH>`: 1 / (1 + exp(-x)) over `n` floats, WIDTH at a time, with torch's Sleef
 * exp (`vector_exp`) for vectors of BITS bits: the operations of torch's own vectorised sigmoid.
 * One body, instantiated for AVX-512 (16 floats) and AVX2 (8). */
#define DEFINE_SIGMOID_VECTOR(BITS, WIDTH, TARGET)                                                \
    __attribute__((target(TARGET))) static void sigmoid_vector##WIDTH(float *x, Py_ssize_t n) {    \
        __m##BITS (*const exp_)(__m##BITS) = (__m##BITS(*)(__m##BITS))vector_exp;                 \
        for (Py_ssize_t k = 0; k + WIDTH <= n; k += WIDTH) {                                      \
            __m##BITS a = _mm##BITS##_sub_ps(_mm##BITS##_setzero_ps(), _mm##BITS##_loadu_ps(x + k)); \
            a = _mm##BITS##_add_ps(exp_(a), _mm##BITS##_set1_ps(1.0f));                           \
            _mm##BITS##_storeu_ps(x + k, _mm##BITS##_div_ps(_mm##BITS##_set1_ps(1.0f), a));       \
        }                                                                                         \
    }
DEFINE_SIGMOID_VECTOR(512, 16, "avx512f")
DEFINE_SIGMOID_VECTOR(256, 8, "avx2")
#endif

/* Sigmoid in place over `length` contiguous floats whose first `vectorised` (a multiple of the
 * vector width) torch's vector loop would cover. */
static void sigmoid_span(float *x, Py_ssize_t length, Py_ssize_t vectorised) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (vector_width == 16)
        sigmoid_vector16(x, vectorised);
    else if (vector_width == 8)
        sigmoid_vector8(x, vectorised);
    else
        vectorised = 0;
#else
    vectorised = 0;
#endif
    for (Py_ssize_t k = vectorised; k < length; k++) x[k] = sigmoid(x[k]);
}

/* How torch.sigmoid_ splits a (rows, length) view between vector and scalar loops with
 * `threads` intra-op threads: TensorIterator gives each thread one range of the flattened
 * elements when there are more than GRAIN_SIZE (at::parallel_for over OpenMP), each range runs
 * row segment by row segment, and within a segment the vector loop takes two vectors at a time
 * from the segment's start and the scalar loop the rest. `chunk`: the range length. */
static Py_ssize_t sigmoid_chunk(Py_ssize_t numel, int threads) {
    Py_ssize_t chunks = 1;
    if (threads > 1 && numel > GRAIN_SIZE) {
        chunks = (numel + GRAIN_SIZE - 1) / GRAIN_SIZE;
        if (chunks > threads) chunks = threads;
    }
    return numel == 0 ? 1 : (numel + chunks - 1) / chunks;
}

/* Row `row` of such a view, at `x`: its segments are its pieces between range boundaries. */
static void sigmoid_row(float *x, Py_ssize_t row, Py_ssize_t length, Py_ssize_t chunk) {
    const Py_ssize_t start = row * length, end = start + length, block = 2 * vector_width;
    for (Py_ssize_t index = start; index < end;) {
        const Py_ssize_t boundary = (index / chunk + 1) * chunk;
        const Py_ssize_t stop = boundary < end ? boundary : end, span = stop - index;
        sigmoid_span(x + (index - start), span, block ? span / block * block : 0);
        index = stop;
    }
}

/* Split rows between threads only when the work pays for waking them. */
#define PARALLEL(threads, elements) ((threads) > 1 && (elements) >= 8192)

static PyObject *set_math(PyObject *self, PyObject *args) {
    Py_ssize_t exp_, tanh_;
    int width;
    if (!PyArg_ParseTuple(args, "inn", &width, &exp_, &tanh_)) return NULL;
    if ((width != 0 && width != 8 && width != 16) || (width != 0 && !exp_) || !tanh_) {
        PyErr_SetString(PyExc_ValueError, "_lstmp_cpu.set_math: bad vector width or address");
        return NULL;
    }
    vector_exp = (void *)(uintptr_t)exp_;
    vector_width = width;
    vml_tanh = (vml_function)(uintptr_t)tanh_;
    Py_RETURN_NONE;
}

/* The element-wise functions alone, for lstmp_cpu.py's check against torch. */
static PyObject *sigmoid_(PyObject *self, PyObject *args) {
    Py_ssize_t x_, rows, length, stride;
    int threads;
    if (!PyArg_ParseTuple(args, "nnnni", &x_, &rows, &length, &stride, &threads)) return NULL;
    Py_BEGIN_ALLOW_THREADS
    const Py_ssize_t chunk = sigmoid_chunk(rows * length, threads);
    for (Py_ssize_t row = 0; row < rows; row++) sigmoid_row(F(x_) + row * stride, row, length, chunk);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static void tanh_into(const float *x, float *y, Py_ssize_t n) {
    while (n > 0) { /* MKL_INT is int */
        const int part = n > INT32_MAX ? INT32_MAX : (int)n;
        vml_tanh(part, x, y, VML_MODE);
        x += part, y += part, n -= part;
    }
}

static PyObject *tanh_(PyObject *self, PyObject *args) {
    Py_ssize_t x_, y_, n;
    if (!PyArg_ParseTuple(args, "nnn", &x_, &y_, &n)) return NULL;
    if (!vml_tanh) {
        PyErr_SetString(PyExc_RuntimeError, "_lstmp_cpu: set_math first");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    tanh_into(F(x_), F(y_), n);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* Clamp that lets NaN through (both comparisons false), as torch.clamp. */
static inline float clamp(float x, float bound) {
    return x < -bound ? -bound : (x > bound ? bound : x);
}

static PyObject *cell_forward(PyObject *self, PyObject *args) {
    Py_ssize_t gates_, prev_, next_, keep_, tanh_, memory_, batch, cell;
    int clip_on, threads;
    float clip;
    if (!PyArg_ParseTuple(args, "nnnnnnnnpfi", &gates_, &prev_, &next_, &keep_, &tanh_,
                          &memory_, &batch, &cell, &clip_on, &clip, &threads))
        return NULL;
    if (!vml_tanh) {
        PyErr_SetString(PyExc_RuntimeError, "_lstmp_cpu: set_math first");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    /* As lstmp_torch.cell_forward: sigmoid_ of the (batch, 2 * cell) i, f view, tanh_ of g,
     * sigmoid_ of the o view, then c_t, its clip, tanh(c_t) and o * tanh(c_t), row by row. */
    const Py_ssize_t if_chunk = sigmoid_chunk(batch * 2 * cell, threads);
    const Py_ssize_t o_chunk = sigmoid_chunk(batch * cell, threads);
#pragma omp parallel for num_threads(threads) schedule(static) if (PARALLEL(threads, batch * cell))
    for (Py_ssize_t row = 0; row < batch; row++) {
        float *i = F(gates_) + row * 4 * cell, *f = i + cell, *g = f + cell, *o = g + cell;
        sigmoid_row(i, row, 2 * cell, if_chunk);
        tanh_into(g, g, cell);
        sigmoid_row(o, row, cell, o_chunk);
        const float *restrict prev = F(prev_) + row * cell;
        float *restrict next = F(next_) + row * cell, *restrict tanh_c = F(tanh_) + row * cell;
        float *restrict memory = F(memory_) + row * cell;
        uint8_t *restrict keep = B(keep_) + row * cell;
        if (clip_on) {
#pragma omp simd
            for (Py_ssize_t k = 0; k < cell; k++) {
                const float c = f[k] * prev[k] + i[k] * g[k];
                keep[k] = (c >= -clip) & (c <= clip);
                next[k] = clamp(c, clip);
            }
        } else {
#pragma omp simd
            for (Py_ssize_t k = 0; k < cell; k++) next[k] = f[k] * prev[k] + i[k] * g[k];
        }
        tanh_into(next, tanh_c, cell);
#pragma omp simd
        for (Py_ssize_t k = 0; k < cell; k++) memory[k] = o[k] * tanh_c[k];
    }
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *projection_forward(PyObject *self, PyObject *args) {
    Py_ssize_t projected_, keep_, hiddens_, dropout_, batch, size;
    int clip_on, copy_on, dropout_on;
    float clip;
    if (!PyArg_ParseTuple(args, "nnnnnnpfpp", &projected_, &keep_, &hiddens_, &dropout_, &batch,
                          &size, &clip_on, &clip, &copy_on, &dropout_on))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t row = 0; row < batch; row++) {
        float *restrict p = F(projected_) + row * size;
        if (clip_on) {
            uint8_t *restrict keep = B(keep_) + row * size;
#pragma omp simd
            for (Py_ssize_t k = 0; k < size; k++) {
                keep[k] = (p[k] >= -clip) & (p[k] <= clip);
                p[k] = clamp(p[k], clip);
            }
        }
        if (!copy_on) continue;  /* h_t = p_t (* dropout) without a LayerNorm */
        float *restrict h = F(hiddens_) + row * size;
        if (dropout_on) {
            const float *restrict d = F(dropout_) + row * size;
#pragma omp simd
            for (Py_ssize_t k = 0; k < size; k++) h[k] = p[k] * d[k];
        } else {
#pragma omp simd
            for (Py_ssize_t k = 0; k < size; k++) h[k] = p[k];
        }
    }
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *projection_backward(PyObject *self, PyObject *args) {
    Py_ssize_t carry_, outputs_, outputs_stride, projected_, means_, rstds_, weight_, keep_;
    Py_ssize_t dropout_, running_, grad_hiddens_, grad_projected_, batch, size;
    int norm_on, clip_on, dropout_on, threads;
    if (!PyArg_ParseTuple(args, "nnnnnnnnnnnnnnpppi", &carry_, &outputs_, &outputs_stride,
                          &projected_, &means_, &rstds_, &weight_, &keep_, &dropout_, &running_,
                          &grad_hiddens_, &grad_projected_, &batch, &size, &norm_on, &clip_on,
                          &dropout_on, &threads))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
#pragma omp parallel for num_threads(threads) schedule(static) if (PARALLEL(threads, batch * size))
    for (Py_ssize_t row = 0; row < batch; row++) {
        float *restrict dh = F(grad_hiddens_) + row * size;
        float *restrict dp = F(grad_projected_) + row * size;
        if (!B(running_)[row]) {
            for (Py_ssize_t k = 0; k < size; k++) dh[k] = dp[k] = 0.0f;
            continue;
        }
        const float *restrict carry = F(carry_) + row * size;
        const float *restrict outputs = F(outputs_) + row * outputs_stride;
#pragma omp simd
        for (Py_ssize_t k = 0; k < size; k++) dh[k] = carry[k] + outputs[k];  /* dL/dh_t */
        if (dropout_on) {  /* dL/dn_t, the state before its dropout */
            const float *restrict d = F(dropout_) + row * size;
#pragma omp simd
            for (Py_ssize_t k = 0; k < size; k++) dh[k] *= d[k];
        }
        if (norm_on) {
            const float *restrict p = F(projected_) + row * size, *restrict w = F(weight_);
            const float mean = F(means_)[row], rstd = F(rstds_)[row];
            double mean_scaled = 0.0, mean_projection = 0.0;
            for (Py_ssize_t k = 0; k < size; k++) {
                float scaled = dh[k] * w[k];
                mean_scaled += scaled;
                mean_projection += (double)scaled * ((p[k] - mean) * rstd);
            }
            const float a = (float)(mean_scaled / size), c = (float)(mean_projection / size);
#pragma omp simd
            for (Py_ssize_t k = 0; k < size; k++)
                dp[k] = (dh[k] * w[k] - a - (p[k] - mean) * rstd * c) * rstd;
        } else {
#pragma omp simd
            for (Py_ssize_t k = 0; k < size; k++) dp[k] = dh[k];
        }
        if (clip_on) {
            const uint8_t *restrict keep = B(keep_) + row * size;
#pragma omp simd
            for (Py_ssize_t k = 0; k < size; k++) dp[k] *= (float)keep[k];
        }
    }
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *gate_backward(PyObject *self, PyObject *args) {
    Py_ssize_t dm_, carry_, gates_, prev_, tanh_, keep_, running_, grad_, batch, cell;
    int clip_on, threads;
    if (!PyArg_ParseTuple(args, "nnnnnnnnnnpi", &dm_, &carry_, &gates_, &prev_, &tanh_, &keep_,
                          &running_, &grad_, &batch, &cell, &clip_on, &threads))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
#pragma omp parallel for num_threads(threads) schedule(static) if (PARALLEL(threads, batch * cell))
    for (Py_ssize_t row = 0; row < batch; row++) {
        float *restrict di = F(grad_) + row * 4 * cell, *restrict df = di + cell;
        float *restrict dg = df + cell, *restrict d_o = dg + cell;
        if (!B(running_)[row]) {  /* no gradient; the cell carry is kept */
            for (Py_ssize_t k = 0; k < 4 * cell; k++) di[k] = 0.0f;
            continue;
        }
        const float *restrict i = F(gates_) + row * 4 * cell, *restrict f = i + cell;
        const float *restrict g = f + cell, *restrict o = g + cell;
        const float *restrict dm = F(dm_) + row * cell, *restrict prev = F(prev_) + row * cell;
        const float *restrict tanh_c = F(tanh_) + row * cell;
        float *restrict carry = F(carry_) + row * cell;  /* dL/dc_t, then the next carry */
#pragma omp simd
        for (Py_ssize_t k = 0; k < cell; k++)
            carry[k] += dm[k] * o[k] * (1.0f - tanh_c[k] * tanh_c[k]);
        if (clip_on) {  /* the mask is read only when there is one */
            const uint8_t *restrict keep = B(keep_) + row * cell;
#pragma omp simd
            for (Py_ssize_t k = 0; k < cell; k++) carry[k] *= (float)keep[k];  /* as torch: NaN * 0 stays NaN */
        }
#pragma omp simd
        for (Py_ssize_t k = 0; k < cell; k++) {
            const float dc = carry[k];
            di[k] = (dc * g[k]) * (i[k] * (1.0f - i[k]));
            df[k] = (dc * prev[k]) * (f[k] * (1.0f - f[k]));
            dg[k] = (dc * i[k]) * (1.0f - g[k] * g[k]);
            d_o[k] = (dm[k] * tanh_c[k]) * (o[k] * (1.0f - o[k]));
            carry[k] = dc * f[k];
        }
    }
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *carry_backward(PyObject *self, PyObject *args) {
    Py_ssize_t dr_, running_, carry_, batch, size;
    if (!PyArg_ParseTuple(args, "nnnnn", &dr_, &running_, &carry_, &batch, &size)) return NULL;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t row = 0; row < batch; row++) {
        if (!B(running_)[row]) continue;
        const float *restrict dr = F(dr_) + row * size;
        float *restrict carry = F(carry_) + row * size;
#pragma omp simd
        for (Py_ssize_t k = 0; k < size; k++) carry[k] = dr[k];
    }
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"set_math", set_math, METH_VARARGS, "torch's vector expf (width) and MKL's vmsTanh."},
    {"sigmoid_", sigmoid_, METH_VARARGS, "torch.sigmoid_ of a strided view, as torch rounds."},
    {"tanh", tanh_, METH_VARARGS, "torch.tanh of contiguous floats, as torch rounds."},
    {"cell_forward", cell_forward, METH_VARARGS, "One step's cell (see lstmp_cpu.py)."},
    {"projection_forward", projection_forward, METH_VARARGS, "One step's projected state."},
    {"projection_backward", projection_backward, METH_VARARGS, "dL/dh_t and dL/dp_t."},
    {"gate_backward", gate_backward, METH_VARARGS, "dL/d(gates) and the cell carry."},
    {"carry_backward", carry_backward, METH_VARARGS, "The hidden carry."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_lstmp_cpu", NULL, -1, methods};

PyMODINIT_FUNC PyInit__lstmp_cpu(void) { return PyModule_Create(&module); }
