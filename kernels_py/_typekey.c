/* kernels_py._jit.signature_key in C: the key that routes a kernel call to its AOT entry point.
 *
 * A Python function calling a kernel (kernels_py.gemm's wrappers, a public wrapper) pays this on
 * every call; in Python it costs ~5x numba's own dispatch (numba types its arguments in C), in C
 * about the same. It must compute exactly what the Python version computes (tests/runtime/test_aot.py
 * compares them): per argument, an array (exactly numpy.ndarray, native byte order, one of the
 * dtypes of _jit._TYPES) gives
 *   1 << 16 | type index | ndim << 4 | layout << 12 | writeable << 14 | aligned << 15
 * (layout 0 = C contiguous, else 1 = F contiguous, else 2), a Python int below 2**63 in magnitude
 * the index of int64, a float float64, a bool bool, a numpy scalar its dtype's index; anything else
 * makes the whole key None. Built by refsim.aot beside the AOT extension. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>

/* Order of _jit._TYPES: bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64. */
static int type_index(PyArray_Descr *d) {
    Py_ssize_t size = PyDataType_ELSIZE(d);
    int log2 = size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : size == 8 ? 3 : -1;
    switch (d->kind) {
    case 'b': return size == 1 ? 0 : -1;
    case 'i': return log2 < 0 ? -1 : 1 + log2;
    case 'u': return log2 < 0 ? -1 : 5 + log2;
    case 'f': return size == 4 ? 9 : size == 8 ? 10 : -1;
    default: return -1;
    }
}

static PyObject *signature_key(PyObject *self, PyObject *args) {
    (void)self;
    if (!PyTuple_CheckExact(args)) {
        PyErr_SetString(PyExc_TypeError, "signature_key takes a tuple");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *key = PyTuple_New(n);
    if (key == NULL) return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *a = PyTuple_GET_ITEM(args, k);
        long code;
        if (PyArray_CheckExact(a)) {
            PyArrayObject *arr = (PyArrayObject *)a;
            int index = type_index(PyArray_DESCR(arr));
            if (index < 0 || !PyArray_ISNOTSWAPPED(arr)) goto none;
            int flags = PyArray_FLAGS(arr);
            long layout = (flags & NPY_ARRAY_C_CONTIGUOUS) ? 0 : (flags & NPY_ARRAY_F_CONTIGUOUS) ? 1 : 2;
            long writeable = (flags & NPY_ARRAY_WRITEABLE) ? 1 : 0;
            long aligned = (flags & NPY_ARRAY_ALIGNED) ? 1 : 0;
            code = (1L << 16) | index | ((long)PyArray_NDIM(arr) << 4) | (layout << 12) | (writeable << 14) |
                   (aligned << 15);
        } else if (PyBool_Check(a)) {
            code = 0;
        } else if (PyLong_CheckExact(a)) {
            int overflow = 0;
            long long v = PyLong_AsLongLongAndOverflow(a, &overflow);
            if (overflow || v == LLONG_MIN) goto none; /* bit_length >= 64 */
            if (v == -1 && PyErr_Occurred()) goto error;
            code = 4;
        } else if (PyFloat_CheckExact(a)) {
            code = 10;
        } else if (PyArray_IsScalar(a, Generic)) {
            PyArray_Descr *d = PyArray_DescrFromScalar(a);
            if (d == NULL) goto error;
            int index = type_index(d);
            Py_DECREF(d);
            if (index < 0) goto none;
            code = index;
        } else {
            goto none;
        }
        PyObject *item = PyLong_FromLong(code);
        if (item == NULL) goto error;
        PyTuple_SET_ITEM(key, k, item);
    }
    return key;
none:
    Py_DECREF(key);
    Py_RETURN_NONE;
error:
    Py_DECREF(key);
    return NULL;
}

static PyMethodDef methods[] = {
    {"signature_key", signature_key, METH_O, "signature_key(args): see kernels_py._jit.signature_key"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_refsim_typekey", NULL, -1, methods};

PyMODINIT_FUNC PyInit__refsim_typekey(void) {
    import_array();
    return PyModule_Create(&module);
}
