/* The module stub that makes the native core importable (so that Python finds its file);
 * its functions are called through ctypes (usmp_dialect/planning/native.py). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    "_native",
    "The planner's native core: see usmp_dialect/planning/native.py.",
    -1,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&native_module); }
