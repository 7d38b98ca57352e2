"""Which BLAS kernels and ISA this torch process runs: shared by the bench/torch_*.py
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


def torch_build_info(torch):
    """The BLAS and ISA this torch runs, from torch.__config__.show() and
    torch.backends.cpu.get_cpu_capability(): for instance "BLAS mkl (oneAPI
    MKL 2024.2), oneDNN v3.13.3, ISA AVX512"; with OpenBLAS loaded (Debian's
    torch), openblas_info() too. Call it after torch ran a matmul."""
    import re

    show = torch.__config__.show()
    blas = re.search(r"BLAS_INFO=(\w+)", show)
    parts = [f"BLAS {blas.group(1) if blas else 'unknown'}"]
    mkl = re.search(r"Math Kernel Library Version ([\w.]+)", show)
    if mkl:
        parts[0] += f" (oneAPI MKL {mkl.group(1)})"
    dnn = re.search(r"MKL-DNN (v[\w.]+)", show)
    if dnn:
        parts.append(f"oneDNN {dnn.group(1)}")
    try:
        parts.append(f"ISA {torch.backends.cpu.get_cpu_capability()}")
    except AttributeError:  # torch < 2.0
        cap = re.search(r"CPU capability usage: (\w+)", show)
        parts.append(f"ISA {cap.group(1) if cap else 'unknown'}")
    if openblas_loaded(torch):
        parts.append(openblas_info())
    return ", ".join(parts)


def openblas_loaded(torch=None):
    """Whether torch runs its products on OpenBLAS (Debian's torch) after a
    matmul: an OpenBLAS library is loaded and, given torch, its build does
    not name MKL. numpy's own scipy_openblas, which torch's PyPI build
    loads beside MKL, does not count."""
    if torch is not None and "BLAS_INFO=mkl" in torch.__config__.show():
        return False
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1].lower() for line in f if ".so" in line}
    except (OSError, IndexError):
        return False
    return any("openblas" in lib and "scipy_openblas" not in lib for lib in libs)
