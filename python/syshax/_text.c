// SPDX-License-Identifier: MIT
/*
 * syshax._text: libshxtext (text/) for Python, the same tokenizer, chat
 * templates and sampler that syshax-run and syshax-serve use: a
 * Tokenizer read from a GGUF, chat_apply() and a Sampler over a row of
 * logits. syshax/text.py is the documented face of it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "sample.h"
#include "tokenizer.h"

static PyObject *raise_errno(int err, const char *what)
{
	PyErr_Format(err == -ENOMEM ? PyExc_MemoryError : PyExc_ValueError,
		     "%s: %s", what, strerror(-err));
	return NULL;
}

/* ---- Tokenizer ---- */

typedef struct {
	PyObject_HEAD
	struct shx_tok *tok;
} TokObject;

static int tok_init(TokObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "path", NULL };
	PyObject *path;
	char err[256] = "";
	int ret;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O&", kwlist,
					 PyUnicode_FSConverter, &path))
		return -1;
	if (self->tok) {
		shx_tok_free(self->tok);
		self->tok = NULL;
	}
	ret = shx_tok_open(PyBytes_AS_STRING(path), &self->tok, err,
			   sizeof(err));
	if (ret) {
		PyErr_Format(ret == -ENOENT ? PyExc_FileNotFoundError :
			     PyExc_ValueError, "%s: %s",
			     PyBytes_AS_STRING(path), err[0] ? err :
			     strerror(-ret));
		Py_DECREF(path);
		return -1;
	}
	Py_DECREF(path);
	return 0;
}

static void tok_dealloc(TokObject *self)
{
	shx_tok_free(self->tok);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static int tok_ready(const TokObject *self)
{
	if (self->tok)
		return 1;
	PyErr_SetString(PyExc_ValueError, "Tokenizer not initialized");
	return 0;
}

static PyObject *tok_encode(TokObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "text", "add_special", "parse_special",
				  NULL };
	const char *text;
	Py_ssize_t len;
	int add = 1, parse = 0;
	unsigned int flags;
	int32_t *ids;
	ssize_t n;
	PyObject *out;

	if (!tok_ready(self) ||
	    !PyArg_ParseTupleAndKeywords(args, kw, "s#|pp", kwlist, &text,
					 &len, &add, &parse))
		return NULL;
	flags = (add ? SHX_TOK_ADD_SPECIAL : 0) |
		(parse ? SHX_TOK_PARSE_SPECIAL : 0);
	Py_BEGIN_ALLOW_THREADS
	n = shx_tok_encode(self->tok, text, (size_t)len, flags, NULL, 0);
	Py_END_ALLOW_THREADS
	if (n < 0)
		return raise_errno((int)n, "encode");
	ids = malloc(((size_t)n + 1) * sizeof(*ids));
	if (!ids)
		return PyErr_NoMemory();
	Py_BEGIN_ALLOW_THREADS
	n = shx_tok_encode(self->tok, text, (size_t)len, flags, ids,
			   (size_t)n + 1);
	Py_END_ALLOW_THREADS
	if (n < 0) {
		free(ids);
		return raise_errno((int)n, "encode");
	}
	out = PyList_New(n);
	for (ssize_t i = 0; out && i < n; i++) {
		PyObject *v = PyLong_FromLong(ids[i]);

		if (!v) {
			Py_CLEAR(out);
			break;
		}
		PyList_SET_ITEM(out, i, v);
	}
	free(ids);
	return out;
}

/* The ids' text as syshax-run streams it: whole UTF-8 characters,
 * invalid bytes as U+FFFD. */
static PyObject *tok_decode(TokObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "ids", "special", NULL };
	PyObject *ids, *seq, *out = NULL;
	int32_t *v = NULL;
	Py_ssize_t n;
	int special = 0;
	size_t len;
	char *text;

	if (!tok_ready(self) ||
	    !PyArg_ParseTupleAndKeywords(args, kw, "O|p", kwlist, &ids,
					 &special))
		return NULL;
	seq = PySequence_Fast(ids, "ids must be a sequence of ints");
	if (!seq)
		return NULL;
	n = PySequence_Fast_GET_SIZE(seq);
	v = malloc((size_t)n * sizeof(*v) + 1);
	if (!v) {
		PyErr_NoMemory();
		goto out;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		long id = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));

		if (id == -1 && PyErr_Occurred())
			goto out;
		if (id < 0 || id >= shx_tok_n_vocab(self->tok)) {
			PyErr_Format(PyExc_ValueError, "decode: id %ld is not "
				     "in 0..%d", id,
				     shx_tok_n_vocab(self->tok) - 1);
			goto out;
		}
		v[i] = (int32_t)id;
	}
	text = shx_tok_decode(self->tok, v, (size_t)n,
			      special ? SHX_TOK_RENDER_SPECIAL : 0, &len);
	if (!text) {
		PyErr_NoMemory();
		goto out;
	}
	out = PyUnicode_DecodeUTF8(text, (Py_ssize_t)len, "replace");
	free(text);
out:
	free(v);
	Py_DECREF(seq);
	return out;
}

static PyObject *tok_piece(TokObject *self, PyObject *args)
{
	int id, special = 0;
	ssize_t n;
	PyObject *out;

	if (!tok_ready(self) || !PyArg_ParseTuple(args, "i|p", &id, &special))
		return NULL;
	n = shx_tok_piece(self->tok, id, special ? SHX_TOK_RENDER_SPECIAL : 0,
			  NULL, 0);
	if (n < 0)
		return raise_errno((int)n, "piece");
	out = PyBytes_FromStringAndSize(NULL, n);
	if (out)
		shx_tok_piece(self->tok, id, special ?
			      SHX_TOK_RENDER_SPECIAL : 0,
			      PyBytes_AS_STRING(out), (size_t)n);
	return out;
}

static PyObject *tok_is_eog(TokObject *self, PyObject *args)
{
	int id;

	if (!tok_ready(self) || !PyArg_ParseTuple(args, "i", &id))
		return NULL;
	return PyBool_FromLong(shx_tok_is_eog(self->tok, id));
}

static PyObject *tok_find(TokObject *self, PyObject *args)
{
	const char *text;

	if (!tok_ready(self) || !PyArg_ParseTuple(args, "s", &text))
		return NULL;
	return PyLong_FromLong(shx_tok_find(self->tok, text));
}

static PyObject *id_or_none(int32_t id)
{
	if (id < 0)
		Py_RETURN_NONE;
	return PyLong_FromLong(id);
}

static PyObject *tok_get(TokObject *self, void *which)
{
	if (!tok_ready(self))
		return NULL;
	switch ((intptr_t)which) {
	case 0:
		return PyLong_FromLong(shx_tok_n_vocab(self->tok));
	case 1:
		return id_or_none(shx_tok_bos(self->tok));
	case 2:
		return id_or_none(shx_tok_eos(self->tok));
	case 3:
		return id_or_none(shx_tok_eot(self->tok));
	default: {
		const char *t = shx_tok_chat_template(self->tok);

		if (!t)
			Py_RETURN_NONE;
		return PyUnicode_FromString(t);
	}
	}
}

static PyMethodDef tok_methods[] = {
	{ "encode", (PyCFunction)(void (*)(void))tok_encode,
	  METH_VARARGS | METH_KEYWORDS,
	  "encode(text, add_special=True, parse_special=False) -> list of ids" },
	{ "decode", (PyCFunction)(void (*)(void))tok_decode,
	  METH_VARARGS | METH_KEYWORDS,
	  "decode(ids, special=False) -> str" },
	{ "piece", (PyCFunction)tok_piece, METH_VARARGS,
	  "piece(id, special=False) -> bytes" },
	{ "is_eog", (PyCFunction)tok_is_eog, METH_VARARGS,
	  "is_eog(id) -> bool: an end-of-generation token" },
	{ "find", (PyCFunction)tok_find, METH_VARARGS,
	  "find(text) -> the id whose text is exactly this, or -1" },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef tok_getset[] = {
	{ "n_vocab", (getter)tok_get, NULL, "vocabulary size", (void *)0 },
	{ "bos", (getter)tok_get, NULL, "BOS id or None", (void *)1 },
	{ "eos", (getter)tok_get, NULL, "EOS id or None", (void *)2 },
	{ "eot", (getter)tok_get, NULL, "EOT id or None", (void *)3 },
	{ "chat_template", (getter)tok_get, NULL,
	  "tokenizer.chat_template or None", (void *)4 },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject TokType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "syshax._text.Tokenizer",
	.tp_doc = "Tokenizer(path): a GGUF's tokenizer.ggml.* vocabulary",
	.tp_basicsize = sizeof(TokObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)tok_init,
	.tp_dealloc = (destructor)tok_dealloc,
	.tp_methods = tok_methods,
	.tp_getset = tok_getset,
};

/* ---- chat templates ---- */

static PyObject *chat_apply(PyObject *mod, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "template", "messages",
				  "add_generation_prompt", NULL };
	const char *tmpl;
	PyObject *msgs, *seq, *out = NULL;
	int add = 1;
	enum shx_chat_tmpl t;
	struct shx_chat_msg *m = NULL;
	Py_ssize_t n;
	ssize_t len;
	char *buf = NULL;

	(void)mod;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "sO|p", kwlist, &tmpl,
					 &msgs, &add))
		return NULL;
	if (shx_chat_by_name(tmpl, &t) && shx_chat_detect(tmpl, &t)) {
		PyErr_Format(PyExc_ValueError, "chat template '%.60s': not a "
			     "family this library applies (chatml, llama3, "
			     "llama2, mistral-v1/v3/v7, deepseek3, ...)", tmpl);
		return NULL;
	}
	seq = PySequence_Fast(msgs, "messages must be a sequence of dicts");
	if (!seq)
		return NULL;
	n = PySequence_Fast_GET_SIZE(seq);
	m = calloc((size_t)n + 1, sizeof(*m));
	if (!m) {
		PyErr_NoMemory();
		goto out;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *d = PySequence_Fast_GET_ITEM(seq, i);
		PyObject *role = PyDict_Check(d) ?
				 PyDict_GetItemString(d, "role") : NULL;
		PyObject *content = PyDict_Check(d) ?
				    PyDict_GetItemString(d, "content") : NULL;

		if (!role || !content || !PyUnicode_Check(role) ||
		    !PyUnicode_Check(content)) {
			PyErr_Format(PyExc_TypeError, "messages[%zd]: a dict "
				     "with str 'role' and 'content'", i);
			goto out;
		}
		m[i].role = PyUnicode_AsUTF8(role);
		m[i].content = PyUnicode_AsUTF8(content);
		if (!m[i].role || !m[i].content)
			goto out;
	}
	len = shx_chat_apply(t, m, (size_t)n, add, NULL, 0);
	if (len < 0) {
		raise_errno((int)len, "chat_apply (a role the template "
			    "cannot take?)");
		goto out;
	}
	buf = malloc((size_t)len + 1);
	if (!buf) {
		PyErr_NoMemory();
		goto out;
	}
	shx_chat_apply(t, m, (size_t)n, add, buf, (size_t)len + 1);
	out = PyUnicode_DecodeUTF8(buf, len, "replace");
out:
	free(buf);
	free(m);
	Py_DECREF(seq);
	return out;
}

static PyObject *chat_name(PyObject *mod, PyObject *args)
{
	const char *tmpl;
	enum shx_chat_tmpl t;

	(void)mod;
	if (!PyArg_ParseTuple(args, "s", &tmpl))
		return NULL;
	if (shx_chat_by_name(tmpl, &t) && shx_chat_detect(tmpl, &t))
		Py_RETURN_NONE;
	return PyUnicode_FromString(shx_chat_name(t));
}

/* ---- Sampler ---- */

typedef struct {
	PyObject_HEAD
	struct shx_sampler *s;
	int32_t n_vocab;
	int32_t n_top;		/* top_logprobs */
} SamplerObject;

static int sampler_init(SamplerObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "n_vocab", "temperature", "top_k", "top_p",
				  "min_p", "repeat_penalty",
				  "frequency_penalty", "presence_penalty",
				  "penalty_last_n", "seed", "top_logprobs",
				  NULL };
	struct shx_sample_params p;
	unsigned long long seed;
	char err[256];
	int n_vocab, ret, n_top = 0;

	shx_sample_defaults(&p);
	seed = p.seed;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "i|$fifffffiKi", kwlist,
					 &n_vocab, &p.temperature, &p.top_k,
					 &p.top_p, &p.min_p,
					 &p.repeat_penalty,
					 &p.frequency_penalty,
					 &p.presence_penalty,
					 &p.penalty_last_n, &seed, &n_top))
		return -1;
	p.seed = seed;
	if (n_top < 0 || n_top > SHX_SAMPLE_LOGPROBS_MAX) {
		PyErr_Format(PyExc_ValueError, "top_logprobs %d is not in "
			     "0..%d", n_top, SHX_SAMPLE_LOGPROBS_MAX);
		return -1;
	}
	if (shx_sample_check(&p, err, sizeof(err))) {
		PyErr_SetString(PyExc_ValueError, err);
		return -1;
	}
	if (self->s) {
		shx_sampler_free(self->s);
		self->s = NULL;
	}
	ret = shx_sampler_new(&p, n_vocab, &self->s);
	if (ret) {
		raise_errno(ret, "Sampler (n_vocab >= 1)");
		return -1;
	}
	self->n_vocab = n_vocab;
	self->n_top = n_top;
	return 0;
}

static void sampler_dealloc(SamplerObject *self)
{
	shx_sampler_free(self->s);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

/* sample(logits): a float32 buffer of n_vocab logits (numpy, array,
 * bytes); the id, or (id, logprob, [(id, logprob), ...]) with
 * top_logprobs: the row's raw logprobs, as syshax-serve returns them
 * (shx_logprobs). The id joins the penalties' history. */
static PyObject *sampler_sample(SamplerObject *self, PyObject *args)
{
	struct shx_sample_out o, lp;
	Py_buffer view;
	PyObject *top;
	int ret;

	if (!self->s) {
		PyErr_SetString(PyExc_ValueError, "Sampler not initialized");
		return NULL;
	}
	if (!PyArg_ParseTuple(args, "y*", &view))
		return NULL;
	if (view.len != (Py_ssize_t)self->n_vocab * 4) {
		PyErr_Format(PyExc_ValueError, "sample: %zd bytes of logits, "
			     "want %d float32", view.len, self->n_vocab);
		PyBuffer_Release(&view);
		return NULL;
	}
	ret = shx_sampler_sample(self->s, view.buf, self->n_vocab, &o);
	if (!ret && self->n_top)
		ret = shx_logprobs(view.buf, self->n_vocab, o.id, self->n_top,
				   &lp);
	PyBuffer_Release(&view);
	if (ret)
		return raise_errno(ret, "sample (NaN or no finite logit?)");
	shx_sampler_accept(self->s, o.id);
	if (!self->n_top)
		return PyLong_FromLong(o.id);
	top = PyList_New(lp.n_top);
	for (int32_t i = 0; top && i < lp.n_top; i++) {
		PyObject *e = Py_BuildValue("(if)", lp.top[i].id,
					    lp.top[i].logprob);

		if (!e) {
			Py_CLEAR(top);
			break;
		}
		PyList_SET_ITEM(top, i, e);
	}
	return top ? Py_BuildValue("(ifN)", o.id, lp.logprob, top) : NULL;
}

static PyObject *sampler_accept(SamplerObject *self, PyObject *args)
{
	int id;

	if (!self->s) {
		PyErr_SetString(PyExc_ValueError, "Sampler not initialized");
		return NULL;
	}
	if (!PyArg_ParseTuple(args, "i", &id))
		return NULL;
	shx_sampler_accept(self->s, id);
	Py_RETURN_NONE;
}

static PyMethodDef sampler_methods[] = {
	{ "sample", (PyCFunction)sampler_sample, METH_VARARGS,
	  "sample(logits) -> id (or (id, logprob, top) with top_logprobs)" },
	{ "accept", (PyCFunction)sampler_accept, METH_VARARGS,
	  "accept(id): a token that joined the sequence (the prompt's)" },
	{ NULL, NULL, 0, NULL },
};

static PyTypeObject SamplerType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "syshax._text.Sampler",
	.tp_doc = "Sampler(n_vocab, *, temperature=1, top_k=0, top_p=1, "
		  "min_p=0, repeat_penalty=1, frequency_penalty=0, "
		  "presence_penalty=0, penalty_last_n=64, seed=0, "
		  "top_logprobs=0)",
	.tp_basicsize = sizeof(SamplerObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)sampler_init,
	.tp_dealloc = (destructor)sampler_dealloc,
	.tp_methods = sampler_methods,
};

static PyMethodDef mod_methods[] = {
	{ "chat_apply", (PyCFunction)(void (*)(void))chat_apply,
	  METH_VARARGS | METH_KEYWORDS,
	  "chat_apply(template, messages, add_generation_prompt=True) -> str" },
	{ "chat_name", (PyCFunction)chat_name, METH_VARARGS,
	  "chat_name(template) -> the family's name, or None" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef text_module = {
	PyModuleDef_HEAD_INIT, "syshax._text",
	"libshxtext: tokenizer, chat templates, sampler", -1, mod_methods,
	NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__text(void)
{
	PyObject *m;

	if (PyType_Ready(&TokType) < 0 || PyType_Ready(&SamplerType) < 0)
		return NULL;
	m = PyModule_Create(&text_module);
	if (!m)
		return NULL;
	Py_INCREF(&TokType);
	Py_INCREF(&SamplerType);
	if (PyModule_AddObject(m, "Tokenizer", (PyObject *)&TokType) < 0 ||
	    PyModule_AddObject(m, "Sampler", (PyObject *)&SamplerType) < 0) {
		Py_DECREF(&TokType);
		Py_DECREF(&SamplerType);
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
