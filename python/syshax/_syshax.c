// SPDX-License-Identifier: MIT
/*
 * syshax._syshax: the C half of the Python package, a thin layer over
 * libsyshax-rt. It owns what must be exact: the UAPI layouts (_layouts.h),
 * the lifetime of handles and mappings, and the GIL around blocking calls.
 * Everything else (job builders, dtypes, views) is Python in syshax/.
 *
 * Lifetimes: a Buffer holds its Context; a Context lists its live Buffers.
 * A Buffer's mapping outlives its handle while views of it exist (the
 * buffer protocol counts them): free() and Context.close() drop handles at
 * once, and the memory is unmapped when the last view goes. So no view can
 * point at unmapped memory, whatever order Python frees things in.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include <syshax/rt.h>

#include "_layouts.h"

/* ---- Errors ----------------------------------------------------------- */

/* Raises syshax.errors.from_errno(err, "<call>: <library message>"). */
static PyObject *raise_err(int err, const char *call, const char *extra)
{
	PyObject *mod, *exc;

	if (err < 0)
		err = -err;
	mod = PyImport_ImportModule("syshax.errors");
	if (!mod)
		return NULL;
	if (extra && *extra)
		exc = PyObject_CallMethod(mod, "from_errno", "iss", err, call,
					  extra);
	else
		exc = PyObject_CallMethod(mod, "from_errno", "iss", err, call,
					  syshax_strerror(err));
	Py_DECREF(mod);
	if (exc) {
		PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
		Py_DECREF(exc);
	}
	return NULL;
}

/* ---- Layouts: pack and unpack UAPI structs ---------------------------- */

static const struct layout *find_layout(const char *name)
{
	const struct layout *l;

	for (l = g_layouts; l->name; l++)
		if (!strcmp(l->name, name))
			return l;
	PyErr_Format(PyExc_KeyError, "no UAPI layout %s", name);
	return NULL;
}

static size_t elem_size(enum fkind k)
{
	return k == FK_U64 ? 8 : k == FK_STR ? 1 : 4;
}

static int put_one(const struct field *f, uint8_t *p, PyObject *v)
{
	unsigned long long u;
	long long s;
	float x;

	switch (f->kind) {
	case FK_U64:
	case FK_U32:
		u = PyLong_AsUnsignedLongLong(v);
		if (u == (unsigned long long)-1 && PyErr_Occurred())
			return -1;
		if (f->kind == FK_U32 && u > UINT32_MAX) {
			PyErr_Format(PyExc_OverflowError,
				     "%s=%llu does not fit 32 bits", f->name, u);
			return -1;
		}
		if (f->kind == FK_U32) {
			uint32_t w = (uint32_t)u;

			memcpy(p, &w, 4);
		} else {
			uint64_t w = u;

			memcpy(p, &w, 8);
		}
		return 0;
	case FK_S32:
		s = PyLong_AsLongLong(v);
		if (s == -1 && PyErr_Occurred())
			return -1;
		if (s < INT32_MIN || s > INT32_MAX) {
			PyErr_Format(PyExc_OverflowError,
				     "%s=%lld does not fit 32 bits", f->name, s);
			return -1;
		}
		{
			int32_t w = (int32_t)s;

			memcpy(p, &w, 4);
		}
		return 0;
	case FK_F32:
		x = (float)PyFloat_AsDouble(v);
		if (x == -1.0f && PyErr_Occurred())
			return -1;
		memcpy(p, &x, 4);
		return 0;
	case FK_STR:
		break;
	}
	return -1;
}

static int put_field(const struct field *f, uint8_t *base, PyObject *v)
{
	size_t n = f->size / elem_size(f->kind), i;
	const char *s;
	Py_ssize_t len;
	PyObject *seq;

	if (f->kind == FK_STR) {
		s = PyUnicode_AsUTF8AndSize(v, &len);
		if (!s)
			return -1;
		if ((size_t)len >= f->size || memchr(s, 0, len)) {
			PyErr_Format(PyExc_ValueError,
				     "%s: at most %zu bytes, no NUL", f->name,
				     f->size - 1);
			return -1;
		}
		memcpy(base + f->off, s, len);
		return 0;
	}
	if (n == 1)
		return put_one(f, base + f->off, v);
	seq = PySequence_Fast(v, "an array field takes a sequence");
	if (!seq)
		return -1;
	if ((size_t)PySequence_Fast_GET_SIZE(seq) > n) {
		PyErr_Format(PyExc_ValueError, "%s: at most %zu values",
			     f->name, n);
		Py_DECREF(seq);
		return -1;
	}
	for (i = 0; i < (size_t)PySequence_Fast_GET_SIZE(seq); i++)
		if (put_one(f, base + f->off + i * elem_size(f->kind),
			    PySequence_Fast_GET_ITEM(seq, i))) {
			Py_DECREF(seq);
			return -1;
		}
	Py_DECREF(seq);
	return 0;
}

static PyObject *get_one(const struct field *f, const uint8_t *p)
{
	uint32_t u32;
	int32_t s32;
	uint64_t u64;
	float x;

	switch (f->kind) {
	case FK_U32:
		memcpy(&u32, p, 4);
		return PyLong_FromUnsignedLong(u32);
	case FK_S32:
		memcpy(&s32, p, 4);
		return PyLong_FromLong(s32);
	case FK_U64:
		memcpy(&u64, p, 8);
		return PyLong_FromUnsignedLongLong(u64);
	case FK_F32:
		memcpy(&x, p, 4);
		return PyFloat_FromDouble(x);
	case FK_STR:
		break;
	}
	return NULL;
}

static PyObject *get_field(const struct field *f, const uint8_t *base)
{
	size_t n = f->size / elem_size(f->kind), i;
	PyObject *list, *v;

	if (f->kind == FK_STR)
		return PyUnicode_DecodeUTF8((const char *)base + f->off,
					    strnlen((const char *)base + f->off,
						    f->size), "replace");
	if (n == 1)
		return get_one(f, base + f->off);
	list = PyList_New(n);
	if (!list)
		return NULL;
	for (i = 0; i < n; i++) {
		v = get_one(f, base + f->off + i * elem_size(f->kind));
		if (!v) {
			Py_DECREF(list);
			return NULL;
		}
		PyList_SET_ITEM(list, i, v);
	}
	return list;
}

/* Fields a dict: every named field of l read at base. */
static PyObject *unpack_at(const struct layout *l, const uint8_t *base)
{
	const struct field *f;
	PyObject *d = PyDict_New(), *v;

	if (!d)
		return NULL;
	for (f = l->fields; f->name; f++) {
		v = get_field(f, base);
		if (!v || PyDict_SetItemString(d, f->name, v)) {
			Py_XDECREF(v);
			Py_DECREF(d);
			return NULL;
		}
		Py_DECREF(v);
	}
	return d;
}

PyDoc_STRVAR(pack_doc, "pack(layout, fields) -> bytes\n\n"
"The UAPI struct `layout` with `fields` (a dict) set, the rest zero.\n"
"An unknown field name is a TypeError.");

static PyObject *py_pack(PyObject *self, PyObject *args)
{
	const struct layout *l;
	const struct field *f;
	PyObject *fields, *key, *val, *out;
	const char *name;
	Py_ssize_t pos = 0;

	(void)self;
	if (!PyArg_ParseTuple(args, "sO!", &name, &PyDict_Type, &fields))
		return NULL;
	l = find_layout(name);
	if (!l)
		return NULL;
	out = PyBytes_FromStringAndSize(NULL, l->size);
	if (!out)
		return NULL;
	memset(PyBytes_AS_STRING(out), 0, l->size);
	while (PyDict_Next(fields, &pos, &key, &val)) {
		const char *k = PyUnicode_AsUTF8(key);

		if (!k)
			goto fail;
		for (f = l->fields; f->name && strcmp(f->name, k); f++)
			;
		if (!f->name) {
			PyErr_Format(PyExc_TypeError, "%s has no field %s",
				     l->name, k);
			goto fail;
		}
		if (put_field(f, (uint8_t *)PyBytes_AS_STRING(out), val))
			goto fail;
	}
	return out;
fail:
	Py_DECREF(out);
	return NULL;
}

PyDoc_STRVAR(unpack_doc, "unpack(layout, data, offset=0) -> dict\n\n"
"The named fields of the UAPI struct `layout` read from `data` (any\n"
"buffer) at `offset`.");

static PyObject *py_unpack(PyObject *self, PyObject *args)
{
	const struct layout *l;
	Py_ssize_t off = 0;
	const char *name;
	PyObject *out;
	Py_buffer b;

	(void)self;
	if (!PyArg_ParseTuple(args, "sy*|n", &name, &b, &off))
		return NULL;
	l = find_layout(name);
	if (!l) {
		PyBuffer_Release(&b);
		return NULL;
	}
	if (off < 0 || (size_t)b.len < l->size ||
	    (size_t)off > (size_t)b.len - l->size) {
		PyBuffer_Release(&b);
		return PyErr_Format(PyExc_ValueError,
				    "%s takes %zu bytes at offset %zd", name,
				    l->size, off);
	}
	out = unpack_at(l, (const uint8_t *)b.buf + off);
	PyBuffer_Release(&b);
	return out;
}

PyDoc_STRVAR(layout_doc, "layout(name) -> (size, {field: (offset, size)})");

static PyObject *py_layout(PyObject *self, PyObject *args)
{
	const struct layout *l;
	const struct field *f;
	const char *name;
	PyObject *d;

	(void)self;
	if (!PyArg_ParseTuple(args, "s", &name))
		return NULL;
	l = find_layout(name);
	if (!l)
		return NULL;
	d = PyDict_New();
	if (!d)
		return NULL;
	for (f = l->fields; f->name; f++) {
		PyObject *v = Py_BuildValue("(nn)", (Py_ssize_t)f->off,
					    (Py_ssize_t)f->size);

		if (!v || PyDict_SetItemString(d, f->name, v)) {
			Py_XDECREF(v);
			Py_DECREF(d);
			return NULL;
		}
		Py_DECREF(v);
	}
	return Py_BuildValue("(nN)", (Py_ssize_t)l->size, d);
}

static PyObject *py_strerror(PyObject *self, PyObject *args)
{
	int err;

	(void)self;
	if (!PyArg_ParseTuple(args, "i", &err))
		return NULL;
	return PyUnicode_FromString(syshax_strerror(err));
}

/* ---- Context and Buffer ------------------------------------------------ */

typedef struct BufferObject BufferObject;

typedef struct {
	PyObject_HEAD
	struct syshax *sh;	/* NULL once closed */
	BufferObject *bufs;	/* live buffers (borrowed: each holds us) */
	int busy;		/* submits and waits running without the GIL */
} ContextObject;

struct BufferObject {
	PyObject_HEAD
	ContextObject *ctx;	/* strong */
	struct syshax_buffer b;
	int has_handle;		/* 0 after free() or the context's close */
	Py_ssize_t exports;	/* views alive (buffer protocol) */
	BufferObject *next, **pprev;
};

static PyTypeObject ContextType, BufferType;

/* Unmaps once no view needs the memory any more. */
static void buf_maybe_unmap(BufferObject *bo)
{
	if (!bo->has_handle && !bo->exports && bo->b.addr) {
		munmap(bo->b.addr, bo->b.size);
		bo->b.addr = NULL;
	}
}

/* Drops the handle, keeping the mapping for live views. */
static int buf_drop_handle(BufferObject *bo)
{
	struct syshax_buffer copy = bo->b;
	int ret = 0;

	if (!bo->has_handle)
		return 0;
	copy.addr = NULL;
	if (bo->ctx->sh)
		ret = syshax_buf_free(bo->ctx->sh, &copy);
	bo->has_handle = 0;
	buf_maybe_unmap(bo);
	return ret;
}

static int ctx_check(ContextObject *c)
{
	if (!c->sh) {
		PyErr_SetString(PyExc_ValueError, "syshax context is closed");
		return -1;
	}
	return 0;
}

static int buf_check(BufferObject *bo)
{
	if (!bo->has_handle) {
		PyErr_SetString(PyExc_ValueError, "syshax buffer was freed");
		return -1;
	}
	return 0;
}

/* A new Buffer for a handle in b: maps it, links it into c. */
static PyObject *buf_new(ContextObject *c, struct syshax_buffer *b)
{
	BufferObject *bo;
	int ret;

	ret = syshax_buf_map(c->sh, b);
	if (ret) {
		syshax_buf_free(c->sh, b);
		return raise_err(ret, "syshax_buf_map", NULL);
	}
	bo = PyObject_New(BufferObject, &BufferType);
	if (!bo) {
		syshax_buf_free(c->sh, b);
		return NULL;
	}
	Py_INCREF(c);
	bo->ctx = c;
	bo->b = *b;
	bo->has_handle = 1;
	bo->exports = 0;
	bo->next = c->bufs;
	if (c->bufs)
		c->bufs->pprev = &bo->next;
	bo->pprev = &c->bufs;
	c->bufs = bo;
	return (PyObject *)bo;
}

static void buf_dealloc(BufferObject *bo)
{
	buf_drop_handle(bo);
	*bo->pprev = bo->next;
	if (bo->next)
		bo->next->pprev = bo->pprev;
	Py_DECREF(bo->ctx);
	PyObject_Free(bo);
}

static int buf_getbuffer(BufferObject *bo, Py_buffer *view, int flags)
{
	if (!bo->b.addr) {
		PyErr_SetString(PyExc_BufferError, "syshax buffer was freed");
		return -1;
	}
	if (PyBuffer_FillInfo(view, (PyObject *)bo, bo->b.addr,
			      (Py_ssize_t)bo->b.size, 0, flags))
		return -1;
	bo->exports++;
	return 0;
}

static void buf_releasebuffer(BufferObject *bo, Py_buffer *view)
{
	(void)view;
	bo->exports--;
	buf_maybe_unmap(bo);
}

static PyBufferProcs buf_as_buffer = {
	.bf_getbuffer = (getbufferproc)buf_getbuffer,
	.bf_releasebuffer = (releasebufferproc)buf_releasebuffer,
};

static PyObject *buf_free(BufferObject *bo, PyObject *unused)
{
	int ret;

	(void)unused;
	ret = buf_drop_handle(bo);
	if (ret)
		return raise_err(ret, "syshax_buf_free", NULL);
	Py_RETURN_NONE;
}

static PyObject *buf_export(BufferObject *bo, PyObject *args, PyObject *kw)
{
	static char *kwl[] = { "cloexec", NULL };
	int cloexec = 1, fd;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|p", kwl, &cloexec))
		return NULL;
	if (buf_check(bo) || ctx_check(bo->ctx))
		return NULL;
	fd = syshax_buf_export(bo->ctx->sh, &bo->b,
			       cloexec ? SYSHAX_EXPORT_CLOEXEC : 0);
	if (fd < 0)
		return raise_err(fd, "syshax_buf_export", NULL);
	return PyLong_FromLong(fd);
}

static PyObject *buf_info(BufferObject *bo, PyObject *unused)
{
	struct syshax_buf_info_args info;
	const struct layout *l = find_layout("buf_info");
	int ret;

	(void)unused;
	if (!l || buf_check(bo) || ctx_check(bo->ctx))
		return NULL;
	ret = syshax_buf_info(bo->ctx->sh, &bo->b, &info);
	if (ret)
		return raise_err(ret, "syshax_buf_info", NULL);
	return unpack_at(l, (const uint8_t *)&info);
}

static PyObject *buf_get_handle(BufferObject *bo, void *c)
{
	(void)c;
	if (buf_check(bo))
		return NULL;
	return PyLong_FromUnsignedLong(bo->b.handle);
}

static PyObject *buf_get_id(BufferObject *bo, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLongLong(bo->b.id);
}

static PyObject *buf_get_size(BufferObject *bo, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLongLong(bo->b.size);
}

static PyObject *buf_get_addr(BufferObject *bo, void *c)
{
	(void)c;
	return PyLong_FromVoidPtr(bo->b.addr);
}

static PyObject *buf_get_freed(BufferObject *bo, void *c)
{
	(void)c;
	return PyBool_FromLong(!bo->has_handle);
}

static PyObject *buf_get_views(BufferObject *bo, void *c)
{
	(void)c;
	return PyLong_FromSsize_t(bo->exports);
}

static PyObject *buf_get_ctx(BufferObject *bo, void *c)
{
	(void)c;
	Py_INCREF(bo->ctx);
	return (PyObject *)bo->ctx;
}

static PyMethodDef buf_methods[] = {
	{ "free", (PyCFunction)buf_free, METH_NOARGS,
	  "free()\n\nDrops the handle now; the memory stays mapped while "
	  "views of it exist. Idempotent." },
	{ "export", (PyCFunction)(void (*)(void))buf_export,
	  METH_VARARGS | METH_KEYWORDS,
	  "export(cloexec=True) -> int\n\nA new fd naming the buffer (a "
	  "dma-buf on the kernel backend); the caller closes it." },
	{ "info", (PyCFunction)buf_info, METH_NOARGS,
	  "info() -> dict\n\nBUF_INFO: kind, size, id, chunks, node, "
	  "node_bytes." },
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef buf_getset[] = {
	{ "handle", (getter)buf_get_handle, NULL, "handle in the context",
	  NULL },
	{ "id", (getter)buf_get_id, NULL, "global buffer id", NULL },
	{ "size", (getter)buf_get_size, NULL, "bytes", NULL },
	{ "addr", (getter)buf_get_addr, NULL,
	  "address of the mapping (0 once unmapped)", NULL },
	{ "freed", (getter)buf_get_freed, NULL, "the handle was dropped",
	  NULL },
	{ "views", (getter)buf_get_views, NULL,
	  "views (numpy arrays, memoryviews) alive", NULL },
	{ "context", (getter)buf_get_ctx, NULL, "the owning _Context", NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

static PyTypeObject BufferType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "syshax._syshax._Buffer",
	.tp_basicsize = sizeof(BufferObject),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_doc = "A mapped syshax buffer (C part of syshax.Buffer).",
	.tp_dealloc = (destructor)buf_dealloc,
	.tp_as_buffer = &buf_as_buffer,
	.tp_methods = buf_methods,
	.tp_getset = buf_getset,
};

/* Context */

static int ctx_init(ContextObject *c, PyObject *args, PyObject *kw)
{
	static char *kwl[] = { "path", "backend", NULL };
	struct syshax_open_opts o = { 0 };
	const char *path = NULL;
	int backend = 0, ret;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|zi", kwl, &path,
					 &backend))
		return -1;
	if (c->sh) {
		PyErr_SetString(PyExc_ValueError, "context already open");
		return -1;
	}
	o.backend = (enum syshax_backend)backend;
	o.path = path;
	Py_BEGIN_ALLOW_THREADS
	ret = syshax_open(&c->sh, &o);
	Py_END_ALLOW_THREADS
	if (ret) {
		c->sh = NULL;
		raise_err(ret, "syshax_open", syshax_open_tried());
		return -1;
	}
	return 0;
}

static void ctx_do_close(ContextObject *c)
{
	BufferObject *bo;

	if (!c->sh)
		return;
	for (bo = c->bufs; bo; bo = bo->next)
		buf_drop_handle(bo);
	syshax_close(c->sh);
	c->sh = NULL;
}

static void ctx_dealloc(ContextObject *c)
{
	ctx_do_close(c);
	Py_TYPE(c)->tp_free((PyObject *)c);
}

/* Another thread may be in submit or wait without the GIL: closing would
 * free the struct syshax under it. (Deallocation cannot race them: each
 * call holds a reference.) */
static PyObject *ctx_close(ContextObject *c, PyObject *unused)
{
	(void)unused;
	if (c->busy)
		return raise_err(-EBUSY, "close", "another thread is in "
				 "submit or wait on this context");
	ctx_do_close(c);
	Py_RETURN_NONE;
}

static PyObject *ctx_alloc(ContextObject *c, PyObject *args, PyObject *kw)
{
	static char *kwl[] = { "size", "node", "flags", NULL };
	unsigned long long size;
	unsigned int flags = 0;
	struct syshax_buffer b;
	int node = -1, ret;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "K|iI", kwl, &size, &node,
					 &flags))
		return NULL;
	if (ctx_check(c))
		return NULL;
	ret = syshax_buf_alloc(c->sh, size, node, flags, &b);
	if (ret)
		return raise_err(ret, "syshax_buf_alloc", NULL);
	return buf_new(c, &b);
}

static PyObject *ctx_import(ContextObject *c, PyObject *args)
{
	struct syshax_buffer b;
	int fd, ret;

	if (!PyArg_ParseTuple(args, "i", &fd))
		return NULL;
	if (ctx_check(c))
		return NULL;
	ret = syshax_buf_import(c->sh, fd, &b);
	if (ret)
		return raise_err(ret, "syshax_buf_import", NULL);
	return buf_new(c, &b);
}

/* One job from (op, flags, user_data, params, [(buf, off, len, access)]). */
static int job_from(ContextObject *c, PyObject *t, struct syshax_job *job)
{
	unsigned long long ud, off, len;
	unsigned int op, flags, access;
	PyObject *refs, *buf;
	Py_buffer params;
	Py_ssize_t i;
	int ret;

	if (!PyArg_ParseTuple(t, "IIKy*O!", &op, &flags, &ud, &params,
			      &PyList_Type, &refs))
		return -1;
	syshax_job_init(job, op, ud);
	job->flags = flags;
	ret = syshax_job_params(job, params.buf, params.len);
	PyBuffer_Release(&params);
	if (ret) {
		PyErr_SetString(PyExc_ValueError, "job params too long");
		return -1;
	}
	for (i = 0; i < PyList_GET_SIZE(refs); i++) {
		if (!PyArg_ParseTuple(PyList_GET_ITEM(refs, i), "O!KKI",
				      &BufferType, &buf, &off, &len, &access))
			return -1;
		if (((BufferObject *)buf)->ctx != c) {
			PyErr_SetString(PyExc_ValueError,
				"a job names a buffer of another context");
			return -1;
		}
		if (buf_check((BufferObject *)buf))
			return -1;
		if (syshax_job_add_ref(job, &((BufferObject *)buf)->b, off,
				       len, access)) {
			PyErr_Format(PyExc_ValueError,
				     "a job takes at most %d refs",
				     SYSHAX_JOB_MAX_REFS);
			return -1;
		}
	}
	return 0;
}

static PyObject *ctx_submit(ContextObject *c, PyObject *args)
{
	struct syshax_job *jobs;
	PyObject *seq, *list;
	Py_ssize_t n, i;
	int ret;

	if (!PyArg_ParseTuple(args, "O", &list))
		return NULL;
	if (ctx_check(c))
		return NULL;
	seq = PySequence_Fast(list, "submit takes a sequence of jobs");
	if (!seq)
		return NULL;
	n = PySequence_Fast_GET_SIZE(seq);
	if (n < 1 || n > UINT32_MAX) {
		Py_DECREF(seq);
		return PyErr_Format(PyExc_ValueError, "submit takes 1 or more "
				    "jobs");
	}
	jobs = PyMem_Calloc(n, sizeof(*jobs));
	if (!jobs) {
		Py_DECREF(seq);
		return PyErr_NoMemory();
	}
	for (i = 0; i < n; i++)
		if (job_from(c, PySequence_Fast_GET_ITEM(seq, i), &jobs[i])) {
			PyMem_Free(jobs);
			Py_DECREF(seq);
			return NULL;
		}
	Py_DECREF(seq);
	c->busy++;
	Py_BEGIN_ALLOW_THREADS
	ret = syshax_submit(c->sh, jobs, (unsigned int)n);
	Py_END_ALLOW_THREADS
	c->busy--;
	PyMem_Free(jobs);
	if (ret < 0)
		return raise_err(ret, "syshax_submit", NULL);
	return PyLong_FromLong(ret);
}

static PyObject *ctx_wait(ContextObject *c, PyObject *args, PyObject *kw)
{
	static char *kwl[] = { "min", "max", "timeout_ns", NULL };
	unsigned int min = 1, max = 64;
	struct syshax_completion *cpls;
	long long timeout = -1;
	PyObject *list;
	int ret, i;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|IIL", kwl, &min, &max,
					 &timeout))
		return NULL;
	if (ctx_check(c))
		return NULL;
	if (max < 1 || max > 65536 || min > max)
		return PyErr_Format(PyExc_ValueError, "need 0 <= min <= max, "
				    "1 <= max <= 65536");
	cpls = PyMem_Calloc(max, sizeof(*cpls));
	if (!cpls)
		return PyErr_NoMemory();
	c->busy++;
	Py_BEGIN_ALLOW_THREADS
	ret = syshax_wait(c->sh, cpls, min, max, timeout);
	Py_END_ALLOW_THREADS
	c->busy--;
	if (ret < 0) {
		PyMem_Free(cpls);
		return raise_err(ret, "syshax_wait", NULL);
	}
	list = PyList_New(ret);
	for (i = 0; list && i < ret; i++) {
		PyObject *t = Py_BuildValue("(KiIKK)",
			(unsigned long long)cpls[i].user_data, cpls[i].status,
			cpls[i].flags, (unsigned long long)cpls[i].result,
			(unsigned long long)cpls[i].exec_ns);

		if (!t) {
			Py_CLEAR(list);
			break;
		}
		PyList_SET_ITEM(list, i, t);
	}
	PyMem_Free(cpls);
	return list;
}

static PyObject *ctx_version(ContextObject *c, PyObject *unused)
{
	struct syshax_version_args v;
	int ret;

	(void)unused;
	if (ctx_check(c))
		return NULL;
	ret = syshax_version(c->sh, &v);
	if (ret)
		return raise_err(ret, "syshax_version", NULL);
	return unpack_at(find_layout("version"), (const uint8_t *)&v);
}

static PyObject *ctx_stats(ContextObject *c, PyObject *unused)
{
	struct syshax_stats_args st;
	int ret;

	(void)unused;
	if (ctx_check(c))
		return NULL;
	ret = syshax_stats(c->sh, &st);
	if (ret)
		return raise_err(ret, "syshax_stats", NULL);
	return unpack_at(find_layout("stats"), (const uint8_t *)&st);
}

static PyObject *ctx_ctx_stats(ContextObject *c, PyObject *unused)
{
	const struct layout *l = find_layout("ctx_stat");
	struct syshax_ctx_stat *cs;
	unsigned int max = 256;
	PyObject *list;
	int ret, i;

	(void)unused;
	if (!l || ctx_check(c))
		return NULL;
	cs = PyMem_Calloc(max, sizeof(*cs));
	if (!cs)
		return PyErr_NoMemory();
	ret = syshax_ctx_stats(c->sh, cs, max, NULL);
	if (ret < 0) {
		PyMem_Free(cs);
		return raise_err(ret, "syshax_ctx_stats", NULL);
	}
	list = PyList_New(ret);
	for (i = 0; list && i < ret; i++) {
		PyObject *d = unpack_at(l, (const uint8_t *)&cs[i]);

		if (!d) {
			Py_CLEAR(list);
			break;
		}
		PyList_SET_ITEM(list, i, d);
	}
	PyMem_Free(cs);
	return list;
}

static PyObject *ctx_set_spin(ContextObject *c, PyObject *args)
{
	unsigned int us;
	int ret;

	if (!PyArg_ParseTuple(args, "I", &us))
		return NULL;
	if (ctx_check(c))
		return NULL;
	ret = syshax_set_spin(c->sh, us);
	if (ret)
		return raise_err(ret, "syshax_set_spin", NULL);
	Py_RETURN_NONE;
}

static PyObject *ctx_get_backend(ContextObject *c, void *cl)
{
	(void)cl;
	if (ctx_check(c))
		return NULL;
	return PyLong_FromLong(syshax_backend(c->sh));
}

static PyObject *ctx_get_fd(ContextObject *c, void *cl)
{
	(void)cl;
	if (ctx_check(c))
		return NULL;
	return PyLong_FromLong(syshax_fd(c->sh));
}

static PyObject *ctx_get_closed(ContextObject *c, void *cl)
{
	(void)cl;
	return PyBool_FromLong(!c->sh);
}

static PyMethodDef ctx_methods[] = {
	{ "close", (PyCFunction)ctx_close, METH_NOARGS,
	  "close()\n\nDrops every buffer handle and closes the backend; "
	  "mappings with live views stay until the views go. Idempotent." },
	{ "alloc", (PyCFunction)(void (*)(void))ctx_alloc,
	  METH_VARARGS | METH_KEYWORDS,
	  "alloc(size, node=-1, flags=0) -> _Buffer (mapped)" },
	{ "import_fd", (PyCFunction)ctx_import, METH_VARARGS,
	  "import_fd(fd) -> _Buffer (mapped); fd stays the caller's" },
	{ "submit", (PyCFunction)ctx_submit, METH_VARARGS,
	  "submit(jobs) -> int: jobs queued (raw tuples)" },
	{ "wait", (PyCFunction)(void (*)(void))ctx_wait,
	  METH_VARARGS | METH_KEYWORDS,
	  "wait(min=1, max=64, timeout_ns=-1) -> [raw completion tuples]" },
	{ "version", (PyCFunction)ctx_version, METH_NOARGS,
	  "version() -> dict" },
	{ "stats", (PyCFunction)ctx_stats, METH_NOARGS, "stats() -> dict" },
	{ "ctx_stats", (PyCFunction)ctx_ctx_stats, METH_NOARGS,
	  "ctx_stats() -> [dict], this context first" },
	{ "set_spin", (PyCFunction)ctx_set_spin, METH_VARARGS,
	  "set_spin(us)" },
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef ctx_getset[] = {
	{ "backend", (getter)ctx_get_backend, NULL,
	  "BACKEND_KERNEL or BACKEND_DAEMON", NULL },
	{ "fd", (getter)ctx_get_fd, NULL, "fd for poll()", NULL },
	{ "closed", (getter)ctx_get_closed, NULL, "close() was called", NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

static PyTypeObject ContextType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "syshax._syshax._Context",
	.tp_basicsize = sizeof(ContextObject),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_doc = "An open backend (C part of syshax.Context).",
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)ctx_init,
	.tp_dealloc = (destructor)ctx_dealloc,
	.tp_methods = ctx_methods,
	.tp_getset = ctx_getset,
};

/* ---- Module ------------------------------------------------------------ */

static PyMethodDef mod_methods[] = {
	{ "pack", py_pack, METH_VARARGS, pack_doc },
	{ "unpack", py_unpack, METH_VARARGS, unpack_doc },
	{ "layout", py_layout, METH_VARARGS, layout_doc },
	{ "strerror", py_strerror, METH_VARARGS,
	  "strerror(err) -> str: libsyshax-rt's message for an errno" },
	{ NULL, NULL, 0, NULL }
};

static struct PyModuleDef mod_def = {
	PyModuleDef_HEAD_INIT, "syshax._syshax",
	"C layer of the syshax package over libsyshax-rt.", -1, mod_methods,
	NULL, NULL, NULL, NULL
};

/* The UAPI constants, under their names less the SYSHAX_ prefix. */
#define K(name) { #name, name }
static const struct {
	const char *name;
	long long v;
} g_consts[] = {
	K(SYSHAX_UAPI_VERSION), K(SYSHAX_CHUNK_SIZE), K(SYSHAX_MAX_NODES),
	K(SYSHAX_JOB_MAX_REFS), K(SYSHAX_JOB_PARAMS_SIZE),
	K(SYSHAX_FEAT_BUF), K(SYSHAX_FEAT_DMABUF), K(SYSHAX_FEAT_REGISTER),
	K(SYSHAX_FEAT_JOBS), K(SYSHAX_FEAT_RINGS), K(SYSHAX_FEAT_CTX_STATS),
	K(SYSHAX_BUF_ALLOW_SMALL), K(SYSHAX_BUF_ALLOW_REMOTE),
	K(SYSHAX_ACCESS_READ), K(SYSHAX_ACCESS_WRITE), K(SYSHAX_ACCESS_RW),
	K(SYSHAX_JOB_MAY_DEFER), K(SYSHAX_CPL_DEFERRED),
	K(SYSHAX_BACKEND_AUTO), K(SYSHAX_BACKEND_KERNEL),
	K(SYSHAX_BACKEND_DAEMON),
	K(SYSHAX_OP_NOP), K(SYSHAX_OP_COPY), K(SYSHAX_OP_WEIGHTS_LOAD),
	K(SYSHAX_OP_GEMM), K(SYSHAX_OP_FFN), K(SYSHAX_OP_MOE),
	K(SYSHAX_OP_ATTN_DECODE), K(SYSHAX_OP_WEIGHTS_FREE),
	K(SYSHAX_OP_ENGINE_STATS), K(SYSHAX_OP_MODEL_LOAD),
	K(SYSHAX_OP_DECODE), K(SYSHAX_OP_PREFILL), K(SYSHAX_OP_REPORT_XPU),
	K(SYSHAX_OP_MAX),
	K(SYSHAX_DT_F32), K(SYSHAX_DT_F16), K(SYSHAX_DT_BF16),
	K(SYSHAX_DT_Q8_0), K(SYSHAX_DT_Q4_0), K(SYSHAX_TENSOR_NAME_MAX),
	K(SYSHAX_WLOAD_BUFFER), K(SYSHAX_WLOAD_FILE),
	K(SYSHAX_QUANT_DEFAULT), K(SYSHAX_QUANT_NONE), K(SYSHAX_QUANT_Q8_0),
	K(SYSHAX_QUANT_Q4_0), K(SYSHAX_WDESC_MAGIC), K(SYSHAX_WDESC_VERSION),
	K(SYSHAX_FFN_NORM), K(SYSHAX_FFN_RESIDUAL),
	K(SYSHAX_MOE_ROUTE_IDS), K(SYSHAX_MOE_ROUTE_LOGITS),
	K(SYSHAX_MOE_ROUTE_ROUTER), K(SYSHAX_MOE_NORM),
	K(SYSHAX_MOE_RESIDUAL), K(SYSHAX_MOE_SHARED), K(SYSHAX_MOE_NORM_TOPK),
	K(SYSHAX_ARCH_LLAMA), K(SYSHAX_ARCH_QWEN2), K(SYSHAX_ARCH_QWEN3),
	K(SYSHAX_ARCH_QWEN3MOE),
	K(SYSHAX_STEP_OUT_LOGITS), K(SYSHAX_STEP_OUT_TOPK),
	K(SYSHAX_STEP_TOPK_MAX), K(SYSHAX_STEP_ALL_ROWS),
	K(SYSHAX_STATS_OPS), K(SYSHAX_STATS_WSETS),
};

PyMODINIT_FUNC PyInit__syshax(void)
{
	PyObject *m;
	size_t i;

	if (PyType_Ready(&ContextType) < 0 || PyType_Ready(&BufferType) < 0)
		return NULL;
	m = PyModule_Create(&mod_def);
	if (!m)
		return NULL;
	for (i = 0; i < sizeof(g_consts) / sizeof(g_consts[0]); i++)
		if (PyModule_AddObject(m, g_consts[i].name + strlen("SYSHAX_"),
				       PyLong_FromLongLong(g_consts[i].v)))
			goto fail;
	if (PyModule_AddIntConstant(m, "ENGINE_STATS_OP_OFF",
				    (long)ENGINE_STATS_OP_OFF))
		goto fail;
	Py_INCREF(&ContextType);
	Py_INCREF(&BufferType);
	if (PyModule_AddObject(m, "_Context", (PyObject *)&ContextType) ||
	    PyModule_AddObject(m, "_Buffer", (PyObject *)&BufferType))
		goto fail;
	return m;
fail:
	Py_DECREF(m);
	return NULL;
}
