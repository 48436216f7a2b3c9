/*
 * `FastTextBin.subword_ids_and_cuts` (fasttext_bin.py) in C, its ints shared through a table.
 * Ids of a word, as fastText's Dictionary::getSubwords: its own row if in the dictionary, then
 * (unless it is "</s>") `num_words + hash % bucket` of the UTF-8 character n-grams of "<word>"
 * (`minn` to `maxn` characters, no 1-gram of "<" or ">"), FNV-1a over signed chars.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Checked by fasttext_bin.py: a build of another version of this file is not used. */
#define SUBWORDS_API 2

typedef struct {
    int minn, maxn, bucket, num_words;
} Settings;

/* A growing array (of bytes or of ids), freed by the caller with PyMem_Free. */
typedef struct {
    void *data;
    Py_ssize_t size, capacity;
} Buffer;

/* Makes room for `needed` items of `item_size` bytes; -1 with MemoryError if there is none. */
static int reserve(Buffer *buffer, Py_ssize_t needed, size_t item_size)
{
    if (needed <= buffer->capacity)
        return 0;
    Py_ssize_t capacity = buffer->capacity > PY_SSIZE_T_MAX / 2 ? needed : 2 * buffer->capacity;
    capacity = Py_MAX(capacity, needed);
    if ((size_t)capacity > (size_t)PY_SSIZE_T_MAX / item_size) {
        PyErr_NoMemory();
        return -1;
    }
    void *data = PyMem_Realloc(buffer->data, (size_t)capacity * item_size);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    buffer->data = data;
    buffer->capacity = capacity;
    return 0;
}

static int push_id(Buffer *ids, long long id)
{
    if (reserve(ids, ids->size + 1, sizeof(long long)) < 0)
        return -1;
    ((long long *)ids->data)[ids->size++] = id;
    return 0;
}

/* Writes the UTF-8 of "<" + word + ">" into `bytes`; 0 on success, -1 with an exception set. */
static int wrap_utf8(PyObject *word, Buffer *bytes)
{
    PyObject *encoded = NULL;
    const char *utf8;
    Py_ssize_t length;
    if (PyUnicode_IS_ASCII(word)) { /* the string's own data: no copy, nothing cached */
        utf8 = PyUnicode_AsUTF8AndSize(word, &length);
    } else { /* a temporary copy; `surrogatepass` also encodes lone surrogates */
        encoded = PyUnicode_AsEncodedString(word, "utf-8", "surrogatepass");
        utf8 = encoded == NULL ? NULL : PyBytes_AS_STRING(encoded);
        length = encoded == NULL ? 0 : PyBytes_GET_SIZE(encoded);
    }
    if (utf8 == NULL || reserve(bytes, length + 2, 1) < 0) {
        Py_XDECREF(encoded);
        return -1;
    }
    char *data = bytes->data;
    data[0] = '<';
    memcpy(data + 1, utf8, (size_t)length);
    data[length + 1] = '>';
    bytes->size = length + 2;
    Py_XDECREF(encoded);
    return 0;
}

/* Appends the n-gram ids of `word` ("<...>" in UTF-8) to `ids`, until it holds `stop` (< 0:
 * all). */
static int push_ngrams(const Buffer *word, const Settings *settings, Buffer *ids, Py_ssize_t stop)
{
    const unsigned char *bytes = word->data;
    Py_ssize_t length = word->size;
    for (Py_ssize_t i = 0; i < length; i++) {
        if ((bytes[i] & 0xC0) == 0x80) /* not the first byte of a character */
            continue;
        uint32_t hash = 2166136261u;
        Py_ssize_t j = i;
        for (int n = 1; j < length && n <= settings->maxn; n++) {
            do { /* one more character, its bytes sign-extended as fastText's signed chars */
                hash = (hash ^ (uint32_t)(int32_t)(signed char)bytes[j++]) * 16777619u;
            } while (j < length && (bytes[j] & 0xC0) == 0x80);
            if (n >= settings->minn && !(n == 1 && (i == 0 || j == length))) {
                if (stop >= 0 && ids->size >= stop)
                    return 0;
                long long id = settings->num_words + (long long)(hash % (uint32_t)settings->bucket);
                if (push_id(ids, id) < 0)
                    return -1;
            }
        }
    }
    return 0;
}

/* The ids of one word into `ids` (emptied first); 0 on success, -1 with an exception set. */
static int word_subword_ids(PyObject *word, PyObject *word_ids, const Settings *settings,
                            Py_ssize_t limit, Buffer *bytes, Buffer *ids)
{
    ids->size = 0;
    if (!PyUnicode_Check(word)) {
        PyErr_Format(PyExc_TypeError, "words must be str, not %.100s", Py_TYPE(word)->tp_name);
        return -1;
    }
    PyObject *own = PyDict_GetItemWithError(word_ids, word); /* borrowed */
    if (own == NULL && PyErr_Occurred())
        return -1;
    if (own != NULL) {
        long long id = PyLong_AsLongLong(own);
        if ((id == -1 && PyErr_Occurred()) || push_id(ids, id) < 0)
            return -1;
    }
    if (settings->maxn <= 0 || settings->bucket <= 0
        || PyUnicode_CompareWithASCIIString(word, "</s>") == 0) /* fastText's EOS: no n-grams */
        return 0;
    if (wrap_utf8(word, bytes) < 0)
        return -1;
    /* One id more than `limit` tells that the word is cut. */
    return push_ngrams(bytes, settings, ids, limit < 0 ? -1 : limit + 1);
}

/* The table of shared ints by row id, in pages allocated when a row of theirs is first met. */
#define PAGE_BITS 12
#define PAGE_SLOTS ((Py_ssize_t)1 << PAGE_BITS)

typedef struct {
    PyObject_HEAD
    PyObject ***pages;    /* num_pages pointers, each NULL until a row of its page is met */
    Py_ssize_t num_pages; /* ceil(rows / PAGE_SLOTS) */
    long long rows;       /* ids in [0, rows) are shared; others get an int of their own */
    Py_ssize_t size;      /* the ints made */
} IntTable;

static void int_table_clear(IntTable *self)
{
    for (Py_ssize_t p = 0; p < self->num_pages; p++) {
        if (self->pages[p] == NULL)
            continue;
        for (Py_ssize_t i = 0; i < PAGE_SLOTS; i++)
            Py_XDECREF(self->pages[p][i]);
        PyMem_Free(self->pages[p]);
    }
    PyMem_Free(self->pages);
    self->pages = NULL;
    self->num_pages = 0;
    self->rows = 0;
    self->size = 0;
}

static int int_table_init(IntTable *self, PyObject *args, PyObject *kwds)
{
    static char *keywords[] = {"rows", NULL};
    long long rows;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "L:IntTable", keywords, &rows))
        return -1;
    if (rows < 0) {
        PyErr_Format(PyExc_ValueError, "IntTable: rows must be >= 0, got %lld", rows);
        return -1;
    }
    int_table_clear(self);
    unsigned long long pages = ((unsigned long long)rows + PAGE_SLOTS - 1) >> PAGE_BITS;
    if (pages > (unsigned long long)(PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(PyObject **))) {
        PyErr_NoMemory();
        return -1;
    }
    self->pages = PyMem_Calloc(pages ? (size_t)pages : 1, sizeof(PyObject **));
    if (self->pages == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    self->num_pages = (Py_ssize_t)pages;
    self->rows = rows;
    return 0;
}

static void int_table_dealloc(IntTable *self)
{
    int_table_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t int_table_length(IntTable *self)
{
    return self->size;
}

static PySequenceMethods int_table_as_sequence = {
    .sq_length = (lenfunc)int_table_length,
};

static PyTypeObject IntTableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "allennlp_elmo_c.fasttext._subwords.IntTable",
    .tp_doc = "IntTable(rows)\n--\n\nThe table of shared ints of the ids 0 .. rows - 1 that "
              "`subword_ids` fills (len: the ints made).",
    .tp_basicsize = sizeof(IntTable),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)int_table_init,
    .tp_dealloc = (destructor)int_table_dealloc,
    .tp_as_sequence = &int_table_as_sequence,
};

/* The int `id` from `ints`, made and kept there if missing (ids repeat across words). */
static PyObject *shared_int(IntTable *ints, long long id)
{
    if (id < 0 || id >= ints->rows)
        return PyLong_FromLongLong(id);
    PyObject **page = ints->pages[id >> PAGE_BITS];
    if (page == NULL) {
        page = PyMem_Calloc((size_t)PAGE_SLOTS, sizeof(PyObject *));
        if (page == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        ints->pages[id >> PAGE_BITS] = page;
    }
    PyObject **slot = &page[id & (PAGE_SLOTS - 1)];
    if (*slot == NULL) {
        *slot = PyLong_FromLongLong(id); /* the table's reference */
        if (*slot == NULL)
            return NULL;
        ints->size++;
    }
    Py_INCREF(*slot);
    return *slot;
}

/* Asks the CPU for the slot of `id` (and its int) ahead of its lookup. */
static void prefetch_int(const IntTable *ints, long long id)
{
    if (id < 0 || id >= ints->rows)
        return;
    PyObject **page = ints->pages[id >> PAGE_BITS];
    if (page != NULL)
        __builtin_prefetch(&page[id & (PAGE_SLOTS - 1)]);
}

static PyObject *subword_ids(PyObject *module, PyObject *args)
{
    PyObject *words, *word_ids;
    IntTable *ints;
    Settings settings;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "OO!O!iiiin:subword_ids", &words, &PyDict_Type, &word_ids,
                          &IntTableType, &ints,
                          &settings.minn, &settings.maxn, &settings.bucket, &settings.num_words,
                          &limit))
        return NULL;
    /* A tuple of the words: a list could change while a str subclass's __eq__ runs. */
    PyObject *sequence = PySequence_Tuple(words);
    if (sequence == NULL)
        return NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(sequence);
    PyObject *result = PyList_New(count), *cut = PyList_New(0);
    Buffer bytes = {NULL, 0, 0}, ids = {NULL, 0, 0};
    if (result == NULL || cut == NULL)
        goto error;
    for (Py_ssize_t w = 0; w < count; w++) {
        PyObject *word = PyTuple_GET_ITEM(sequence, w);
        if (word_subword_ids(word, word_ids, &settings, limit, &bytes, &ids) < 0)
            goto error;
        Py_ssize_t kept = ids.size;
        if (limit >= 0 && kept > limit) {
            kept = limit;
            PyObject *index = PyLong_FromSsize_t(w);
            int appended = index == NULL ? -1 : PyList_Append(cut, index);
            Py_XDECREF(index);
            if (appended < 0)
                goto error;
        }
        PyObject *tuple = PyTuple_New(kept);
        if (tuple == NULL)
            goto error;
        PyList_SET_ITEM(result, w, tuple); /* owned by the list from here on */
        const long long *word_ids = ids.data;
        for (Py_ssize_t k = 0; k < kept; k++) {
            /* Slots are met at random: fetch a few ids ahead. */
            if (k + 4 < kept)
                prefetch_int(ints, word_ids[k + 4]);
            PyObject *id = shared_int(ints, word_ids[k]);
            if (id == NULL)
                goto error;
            PyTuple_SET_ITEM(tuple, k, id);
        }
        /* A tuple of ints holds no cycle: the garbage collector need not track it. */
        if (kept > 0)
            PyObject_GC_UnTrack(tuple);
    }
    PyMem_Free(bytes.data);
    PyMem_Free(ids.data);
    Py_DECREF(sequence);
    PyObject *pair = PyTuple_Pack(2, result, cut);
    Py_DECREF(result);
    Py_DECREF(cut);
    return pair;

error:
    PyMem_Free(bytes.data);
    PyMem_Free(ids.data);
    Py_DECREF(sequence);
    Py_XDECREF(result);
    Py_XDECREF(cut);
    return NULL;
}

static PyMethodDef methods[] = {
    {"subword_ids", subword_ids, METH_VARARGS,
     "subword_ids(words, word_ids, ints, minn, maxn, bucket, num_words, limit)\n--\n\n"
     "fastText subword ids of each of `words` (a list of tuples of ints, at most `limit` ids\n"
     "each; `limit` < 0: no limit) and the indices of the words that had more than `limit` (a\n"
     "list). `word_ids`: the dictionary (str -> id); `ints`: the table of shared ints (an\n"
     "IntTable, filled as ids are met)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_subwords",
    "fastText subword ids in C (see allennlp_elmo_c.fasttext.fasttext_bin).", -1, methods,
};

PyMODINIT_FUNC PyInit__subwords(void)
{
    if (PyType_Ready(&IntTableType) < 0)
        return NULL;
    PyObject *created = PyModule_Create(&module);
    if (created != NULL && (PyModule_AddObjectRef(created, "IntTable", (PyObject *)&IntTableType) < 0
                            || PyModule_AddIntConstant(created, "API", SUBWORDS_API) < 0))
        Py_CLEAR(created);
    return created;
}
