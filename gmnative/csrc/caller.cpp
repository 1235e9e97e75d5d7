
// graphmode native backend: calls a kernel `void k(void* const* args, int threads)` with the
// data pointers of C-contiguous NumPy arrays, checking each one first (NumPy's C API: ~20 ns
// an argument, a tenth of the buffer protocol's cost).
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#define GM_MAX_ARGS 512
typedef void (*gm_kernel)(void* const*, int);

// Checks the n arrays (sizes[i] is the byte size of array i, negative for an array the
// kernel writes; types[i] its NumPy type number): an ndarray, C-contiguous, aligned, native
// byte order, of that type and size, writeable where written; TypeError or ValueError
// otherwise. Fills ptrs[first..first+n) and adds the bytes to *total. 0 on success.
static int gm_check(PyObject* const* arrays, Py_ssize_t first, Py_ssize_t n, PyObject* sizes,
                    const unsigned char* want_type, void** ptrs, Py_ssize_t* total) {
    for (Py_ssize_t i = first; i < first + n; ++i) {
        PyObject* obj = arrays[i - first];
        if (!PyArray_Check(obj)) {
            PyErr_Format(PyExc_TypeError, "native kernel: argument %zd is not a NumPy array", i);
            return -1;
        }
        PyArrayObject* a = (PyArrayObject*)obj;
        long long want = PyLong_AsLongLong(PyTuple_GET_ITEM(sizes, i));
        int writable = want < 0;
        if (writable) want = -want;
        if (!PyArray_IS_C_CONTIGUOUS(a) || !PyArray_ISALIGNED(a) || !PyArray_ISNOTSWAPPED(a)) {
            PyErr_Format(PyExc_ValueError, "native kernel: array %zd is not C-contiguous, aligned and native", i);
            return -1;
        }
        if (!PyArray_EquivTypenums(PyArray_TYPE(a), (int)want_type[i])) {
            PyErr_Format(PyExc_ValueError, "native kernel: array %zd has type %d, expected %d", i, PyArray_TYPE(a),
                         (int)want_type[i]);
            return -1;
        }
        if ((long long)PyArray_NBYTES(a) != want) {
            PyErr_Format(PyExc_ValueError, "native kernel: array %zd has %zd bytes, expected %lld", i,
                         (Py_ssize_t)PyArray_NBYTES(a), want);
            return -1;
        }
        if (writable && !PyArray_ISWRITEABLE(a)) {
            PyErr_Format(PyExc_ValueError, "native kernel: array %zd is read-only", i);
            return -1;
        }
        ptrs[i] = PyArray_DATA(a);
        *total += (Py_ssize_t)want;
    }
    return 0;
}

static void gm_run(gm_kernel fn, long nt, void** ptrs, Py_ssize_t total) {
    // the arguments (and the new arrays) hold references to the arrays for the call
    if (total >= (1 << 16)) {
        Py_BEGIN_ALLOW_THREADS
        fn(ptrs, (int)nt);
        Py_END_ALLOW_THREADS
    } else {
        fn(ptrs, (int)nt);
    }
}

static int gm_header(PyObject* const* args, Py_ssize_t n, gm_kernel* fn, long* nt,
                     const unsigned char** want_type) {
    *fn = (gm_kernel)PyLong_AsVoidPtr(args[0]);
    *nt = PyLong_AsLong(args[1]);
    if (PyErr_Occurred()) return -1;
    PyObject* sizes = args[2];
    PyObject* types = args[3];
    if (!PyTuple_Check(sizes) || PyTuple_GET_SIZE(sizes) != n || n > GM_MAX_ARGS || !PyBytes_Check(types) ||
        PyBytes_GET_SIZE(types) != n) {
        PyErr_SetString(PyExc_TypeError, "native kernel: one size and one type per array");
        return -1;
    }
    *want_type = (const unsigned char*)PyBytes_AS_STRING(types);
    return 0;
}

// call(kernel_address, threads, sizes, types, *arrays): every array checked, then the kernel.
static PyObject* gm_call(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
    (void)self;
    if (nargs < 4) {
        PyErr_SetString(PyExc_TypeError, "call(kernel, threads, sizes, types, *arrays)");
        return NULL;
    }
    gm_kernel fn;
    long nt;
    const unsigned char* want_type;
    Py_ssize_t n = nargs - 4, total = 0;
    void* ptrs[GM_MAX_ARGS];
    if (gm_header(args, n, &fn, &nt, &want_type) < 0) return NULL;
    if (gm_check(args + 4, 0, n, args[2], want_type, ptrs, &total) < 0) return NULL;
    gm_run(fn, nt, ptrs, total);
    Py_RETURN_NONE;
}

// call_new(kernel_address, threads, sizes, types, shapes, *arrays): as call, but the last
// len(shapes) buffers are new C-contiguous arrays of those shapes (and of their types),
// made here (cheaper than np.empty from Python) and returned as a tuple.
static PyObject* gm_call_new(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
    (void)self;
    if (nargs < 5 || !PyTuple_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "call_new(kernel, threads, sizes, types, shapes, *arrays)");
        return NULL;
    }
    PyObject* shapes = args[4];
    Py_ssize_t given = nargs - 5, fresh = PyTuple_GET_SIZE(shapes), n = given + fresh, total = 0;
    gm_kernel fn;
    long nt;
    const unsigned char* want_type;
    void* ptrs[GM_MAX_ARGS];
    if (gm_header(args, n, &fn, &nt, &want_type) < 0) return NULL;
    if (gm_check(args + 5, 0, given, args[2], want_type, ptrs, &total) < 0) return NULL;
    PyObject* out = PyTuple_New(fresh);
    if (out == NULL) return NULL;
    for (Py_ssize_t j = 0; j < fresh; ++j) {
        PyObject* shape = PyTuple_GET_ITEM(shapes, j);
        npy_intp dims[NPY_MAXDIMS];
        Py_ssize_t nd = PyTuple_Check(shape) ? PyTuple_GET_SIZE(shape) : -1;
        if (nd < 0 || nd > NPY_MAXDIMS) {
            Py_DECREF(out);
            PyErr_SetString(PyExc_TypeError, "native kernel: a shape is a tuple of at most NPY_MAXDIMS sizes");
            return NULL;
        }
        for (Py_ssize_t d = 0; d < nd; ++d) dims[d] = (npy_intp)PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
        if (PyErr_Occurred()) {
            Py_DECREF(out);
            return NULL;
        }
        PyObject* a = PyArray_SimpleNew((int)nd, dims, (int)want_type[given + j]);
        if (a == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, j, a);
        if (gm_check(&a, given + j, 1, args[2], want_type, ptrs, &total) < 0) {
            Py_DECREF(out);
            return NULL;
        }
    }
    gm_run(fn, nt, ptrs, total);
    return out;
}

// copy_pairs(destinations, sources) -> list of the indices not copied, or None (nothing
// copied) when a destination that is an ndarray is read-only. A compiled training step writes
// back ~150 parameters, gradients and optimizer states after each call: np.copyto cost 2 us
// of call overhead each (0.3 ms a step), this 50 ns a pair. A pair is copied here only where
// np.copyto would copy the bytes unchanged (both ndarrays, C-contiguous, aligned, native byte
// order, of one type and shape); the caller copies the others (casts, broadcasts, other
// layouts, other devices) itself, after these.
static PyObject* gm_copy_pairs(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2 || !PyList_Check(args[0]) || !PyList_Check(args[1]) ||
        PyList_GET_SIZE(args[0]) != PyList_GET_SIZE(args[1])) {
        PyErr_SetString(PyExc_TypeError, "copy_pairs(destinations, sources): two lists of one length");
        return NULL;
    }
    const Py_ssize_t n = PyList_GET_SIZE(args[0]);
    for (Py_ssize_t i = 0; i < n; ++i) {  // every destination checked before any is written
        PyObject* d = PyList_GET_ITEM(args[0], i);
        if (PyArray_Check(d) && !PyArray_ISWRITEABLE((PyArrayObject*)d)) Py_RETURN_NONE;
    }
    PyObject* left = PyList_New(0);
    if (left == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject* d = PyList_GET_ITEM(args[0], i);
        PyObject* s = PyList_GET_ITEM(args[1], i);
        int fast = PyArray_Check(d) && PyArray_Check(s);
        if (fast) {
            PyArrayObject* da = (PyArrayObject*)d;
            PyArrayObject* sa = (PyArrayObject*)s;
            fast = PyArray_IS_C_CONTIGUOUS(da) && PyArray_IS_C_CONTIGUOUS(sa) && PyArray_ISALIGNED(da) &&
                   PyArray_ISALIGNED(sa) && PyArray_ISNOTSWAPPED(da) && PyArray_ISNOTSWAPPED(sa) &&
                   PyArray_TYPE(da) == PyArray_TYPE(sa) &&
                   PyArray_NDIM(da) == PyArray_NDIM(sa) &&
                   PyArray_CompareLists(PyArray_DIMS(da), PyArray_DIMS(sa), PyArray_NDIM(da));
            if (fast && PyArray_DATA(da) != PyArray_DATA(sa))
                memmove(PyArray_DATA(da), PyArray_DATA(sa), (size_t)PyArray_NBYTES(da));
        }
        if (!fast) {
            PyObject* k = PyLong_FromSsize_t(i);
            if (k == NULL || PyList_Append(left, k) < 0) {
                Py_XDECREF(k);
                Py_DECREF(left);
                return NULL;
            }
            Py_DECREF(k);
        }
    }
    return left;
}

static PyMethodDef gm_methods[] = {
    {"call", (PyCFunction)(void (*)(void))gm_call, METH_FASTCALL, "call(kernel, threads, sizes, types, *arrays)"},
    {"call_new", (PyCFunction)(void (*)(void))gm_call_new, METH_FASTCALL,
     "call_new(kernel, threads, sizes, types, shapes, *arrays) -> the new arrays"},
    {"copy_pairs", (PyCFunction)(void (*)(void))gm_copy_pairs, METH_FASTCALL,
     "copy_pairs(destinations, sources) -> the indices of the pairs it left to the caller"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef gm_module = {PyModuleDef_HEAD_INIT, "graphmode_native_call", NULL, -1, gm_methods};

PyMODINIT_FUNC PyInit_graphmode_native_call(void) {
    import_array();
    return PyModule_Create(&gm_module);
}
