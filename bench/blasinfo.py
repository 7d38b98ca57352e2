"""Which BLAS kernels this torch process runs: shared by the bench/torch_*.py
scripts, which print it beside their figures."""
import ctypes
import os


def openblas_info():
    """The OpenBLAS the process has loaded, its build and the kernels (core)
    it picked, and OPENBLAS_CORETYPE; call it after torch ran a matmul."""
    coretype = os.environ.get("OPENBLAS_CORETYPE", "")
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "blas" in line.split()[-1].lower() and ".so" in line}
        for lib in sorted(libs):
            h = ctypes.CDLL(lib)
            if hasattr(h, "openblas_get_corename"):
                h.openblas_get_corename.restype = ctypes.c_char_p
                h.openblas_get_config.restype = ctypes.c_char_p
                return (f"{h.openblas_get_config().decode()}, kernels {h.openblas_get_corename().decode()} "
                        f"(OPENBLAS_CORETYPE={coretype!r}, {os.path.basename(lib)})")
        return f"BLAS {', '.join(sorted(os.path.basename(l) for l in libs)) or 'unknown'} (not OpenBLAS)"
    except (OSError, IndexError) as e:
        return f"BLAS unknown ({e})"


def set_openblas_threads(n):
    """Sets the number of threads OpenBLAS's own pool uses (torch's OpenMP
    threads are apart) and returns the previous number, or None when the
    process runs no OpenBLAS; call it after torch ran a matmul."""
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "blas" in line.split()[-1].lower() and ".so" in line}
        for lib in sorted(libs):
            h = ctypes.CDLL(lib)
            if hasattr(h, "openblas_set_num_threads") and hasattr(h, "openblas_get_num_threads"):
                old = h.openblas_get_num_threads()
                h.openblas_set_num_threads(int(n))
                return old
    except (OSError, IndexError):
        pass
    return None
