# SPDX-License-Identifier: MIT
"""Builds the syshax package: Python modules and the C extensions
syshax._syshax, linked with the tree's static libsyshax-rt, and
syshax._text, with its libshxtext.

The extension is compiled against the tree's own headers (uapi/,
runtime/include/) and links $SYSHAX_BUILD/runtime/libsyshax-rt.a (default:
../build, what `make` builds), so it needs no installed library and works
with the library of the same tree. Build the library first (`make`).
Build files go beneath $SYSHAX_BUILD/python, not into the source tree.
"""
import os

from setuptools import Extension, setup

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.dirname(here)
build = os.path.abspath(os.environ.get("SYSHAX_BUILD",
                                       os.path.join(top, "build")))
lib = os.path.join(build, "runtime", "libsyshax-rt.a")
if not os.path.exists(lib):
    raise SystemExit(f"setup.py: {lib} is missing: run `make` in {top} "
                     "first (or set SYSHAX_BUILD to its build folder)")

ext = Extension(
    "syshax._syshax",
    sources=["syshax/_syshax.c"],
    depends=["syshax/_layouts.h", lib,
             os.path.join(top, "uapi", "syshax.h"),
             os.path.join(top, "uapi", "syshax_ops.h"),
             os.path.join(top, "runtime", "include", "syshax", "rt.h")],
    include_dirs=[os.path.join(top, "uapi"),
                  os.path.join(top, "runtime", "include")],
    extra_compile_args=["-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra",
                        "-Werror"],
    extra_objects=[lib],
    libraries=["pthread"],
)

# syshax._text: libshxtext (text/), the tokenizer, chat templates and
# sampler of syshax-run and syshax-serve, with the GGUF reader it uses.
text_objs = [os.path.join(build, "libshxtext.a")] + [
    os.path.join(build, "daemon", "model", o)
    for o in ("tfile.o", "gguf.o", "safetensors.o")]
for o in text_objs:
    if not os.path.exists(o):
        raise SystemExit(f"setup.py: {o} is missing: run `make` in {top}")
text_ext = Extension(
    "syshax._text",
    sources=["syshax/_text.c"],
    depends=text_objs + [os.path.join(top, "text", h)
                         for h in ("tokenizer.h", "chat.h", "sample.h")],
    include_dirs=[os.path.join(top, "text")],
    extra_compile_args=["-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra",
                        "-Werror"],
    extra_objects=text_objs,
    libraries=["pcre2-8", "cjson", "m"],
)

out = os.path.join(build, "python")
setup(
    packages=["syshax"],
    package_data={"syshax": ["py.typed"]},
    exclude_package_data={"syshax": ["*.c", "*.h"]},
    ext_modules=[ext, text_ext],
    options={"build": {"build_base": out},
             "egg_info": {"egg_base": out}},
)
