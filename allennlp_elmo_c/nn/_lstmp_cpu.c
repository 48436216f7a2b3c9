/*
 * The per-step pointwise work of the LSTMP cell (allennlp_elmo_c/nn/lstmp.py) on CPU, float32:
 * the five functions of lstmp_triton.py, as plain loops. Each replaces 5-15 torch operators
 * (each a dispatch of a few microseconds, which dominates a step at small sizes) with one pass
 * over memory. Built by setup.py; lstmp_cpu.py checks the tensors and passes their addresses.
 *
 * Gate order i, f, g, o; rows are contiguous; `keep` masks are bytes (torch.bool). The math is
 * lstmp._forward_steps / lstmp._backward_steps' (tests/nn/test_lstmp_cpu.py compares them).
 * expf and tanhf are declared SIMD-callable so that GCC vectorizes the loops with glibc's
 * vector math library (libmvec, a few ulp), without -ffast-math: NaN and infinities keep their
 * IEEE behaviour (a NaN cell stays NaN through the clip, as torch.clamp leaves it).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((simd("notinbranch"))) extern float expf(float);
__attribute__((simd("notinbranch"))) extern float tanhf(float);
#endif

#define F(address) ((float *)(uintptr_t)(address))
#define B(address) ((uint8_t *)(uintptr_t)(address))

static inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* Clamp that lets NaN through (both comparisons false), as torch.clamp. */
static inline float clamp(float x, float bound) {
    return x < -bound ? -bound : (x > bound ? bound : x);
}

static PyObject *cell_forward(PyObject *self, PyObject *args) {
    Py_ssize_t gates_, prev_, next_, keep_, tanh_, memory_, batch, cell;
    int clip_on;
    float clip;
    if (!PyArg_ParseTuple(args, "nnnnnnnnpf", &gates_, &prev_, &next_, &keep_, &tanh_, &memory_,
                          &batch, &cell, &clip_on, &clip))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t row = 0; row < batch; row++) {
        float *restrict i = F(gates_) + row * 4 * cell, *restrict f = i + cell;
        float *restrict g = f + cell, *restrict o = g + cell;
        const float *restrict prev = F(prev_) + row * cell;
        float *restrict next = F(next_) + row * cell, *restrict tanh_c = F(tanh_) + row * cell;
        float *restrict memory = F(memory_) + row * cell;
        uint8_t *restrict keep = B(keep_) + row * cell;
#pragma omp simd
        for (Py_ssize_t k = 0; k < cell; k++) {
            i[k] = sigmoid(i[k]);
            f[k] = sigmoid(f[k]);
            g[k] = tanhf(g[k]);
            o[k] = sigmoid(o[k]);
        }
        if (clip_on) {
#pragma omp simd
            for (Py_ssize_t k = 0; k < cell; k++) {
                float c = f[k] * prev[k] + i[k] * g[k];
                keep[k] = (c >= -clip) & (c <= clip);
                next[k] = clamp(c, clip);
            }
        } else {
#pragma omp simd
            for (Py_ssize_t k = 0; k < cell; k++) next[k] = f[k] * prev[k] + i[k] * g[k];
        }
#pragma omp simd
        for (Py_ssize_t k = 0; k < cell; k++) {
            tanh_c[k] = tanhf(next[k]);
            memory[k] = o[k] * tanh_c[k];
        }
    }
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *projection_forward(PyObject *self, PyObject *args) {
    Py_ssize_t projected_, keep_, hiddens_, means_, rstds_, weight_, bias_, dropout_, recurrent_;
    Py_ssize_t batch, size;
    int clip_on, norm_on, dropout_on;
    float clip, eps;
    if (!PyArg_ParseTuple(args, "nnnnnnnnnnnpfpfp", &projected_, &keep_, &hiddens_, &means_,
                          &rstds_, &weight_, &bias_, &dropout_, &recurrent_, &batch, &size,
                          &clip_on, &clip, &norm_on, &eps, &dropout_on))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t row = 0; row < batch; row++) {
        float *restrict p = F(projected_) + row * size, *restrict h = F(hiddens_) + row * size;
        if (clip_on) {
            uint8_t *restrict keep = B(keep_) + row * size;
#pragma omp simd
            for (Py_ssize_t k = 0; k < size; k++) {
                keep[k] = (p[k] >= -clip) & (p[k] <= clip);
                p[k] = clamp(p[k], clip);
            }
        }
        if (norm_on) {
            /* torch.native_layer_norm's statistics: biased variance, rstd = 1 / sqrt(var + eps);
             * accumulated in double here (torch: float32 with a pairwise cascade). */
            double sum = 0.0, squares = 0.0;
            for (Py_ssize_t k = 0; k < size; k++) sum += p[k];
            const float mean = (float)(sum / size);
            for (Py_ssize_t k = 0; k < size; k++) {
                double centred = (double)p[k] - mean;
                squares += centred * centred;
            }
            const float rstd = (float)(1.0 / sqrt(squares / size + eps));
            F(means_)[row] = mean;
            F(rstds_)[row] = rstd;
            const float *restrict w = F(weight_), *restrict b = F(bias_);
#pragma omp simd
            for (Py_ssize_t k = 0; k < size; k++) h[k] = (p[k] - mean) * rstd * w[k] + b[k];
        } else {
#pragma omp simd
            for (Py_ssize_t k = 0; k < size; k++) h[k] = p[k];
        }
        if (dropout_on) {
            const float *restrict d = F(dropout_) + row * size;
            float *restrict r = F(recurrent_) + row * size;
#pragma omp simd
            for (Py_ssize_t k = 0; k < size; k++) r[k] = h[k] * d[k];
        }
    }
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *projection_backward(PyObject *self, PyObject *args) {
    Py_ssize_t carry_, outputs_, outputs_stride, projected_, means_, rstds_, weight_, keep_;
    Py_ssize_t running_, grad_hiddens_, grad_projected_, batch, size;
    int norm_on, clip_on;
    if (!PyArg_ParseTuple(args, "nnnnnnnnnnnnnpp", &carry_, &outputs_, &outputs_stride,
                          &projected_, &means_, &rstds_, &weight_, &keep_, &running_,
                          &grad_hiddens_, &grad_projected_, &batch, &size, &norm_on, &clip_on))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
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
        for (Py_ssize_t k = 0; k < size; k++) dh[k] = carry[k] + outputs[k];
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
    int clip_on;
    if (!PyArg_ParseTuple(args, "nnnnnnnnnnp", &dm_, &carry_, &gates_, &prev_, &tanh_, &keep_,
                          &running_, &grad_, &batch, &cell, &clip_on))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
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
    Py_ssize_t dr_, dropout_, running_, carry_, batch, size;
    int dropout_on;
    if (!PyArg_ParseTuple(args, "nnnnnnp", &dr_, &dropout_, &running_, &carry_, &batch, &size,
                          &dropout_on))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t row = 0; row < batch; row++) {
        if (!B(running_)[row]) continue;
        const float *restrict dr = F(dr_) + row * size;
        float *restrict carry = F(carry_) + row * size;
        if (dropout_on) {
            const float *restrict d = F(dropout_) + row * size;
#pragma omp simd
            for (Py_ssize_t k = 0; k < size; k++) carry[k] = dr[k] * d[k];
        } else {
#pragma omp simd
            for (Py_ssize_t k = 0; k < size; k++) carry[k] = dr[k];
        }
    }
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"cell_forward", cell_forward, METH_VARARGS, "One step's cell (see lstmp_cpu.py)."},
    {"projection_forward", projection_forward, METH_VARARGS, "One step's projected state."},
    {"projection_backward", projection_backward, METH_VARARGS, "dL/dh_t and dL/dp_t."},
    {"gate_backward", gate_backward, METH_VARARGS, "dL/d(gates) and the cell carry."},
    {"carry_backward", carry_backward, METH_VARARGS, "The hidden carry."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_lstmp_cpu", NULL, -1, methods};

PyMODINIT_FUNC PyInit__lstmp_cpu(void) { return PyModule_Create(&module); }
