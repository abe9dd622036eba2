/*
 * pickle.c: a restricted reader of Python pickles (pickle.h says what it
 * reads and what it never does).
 *
 * The machine of Python's pickle.py (Lib/pickle.py, _Unpickler), cut
 * down to data: a stack of values, a stack of marks (positions in the
 * stack), and the memo, an array indexed by BINPUT's number.  load()
 * moves through the input one opcode at a time; every opcode checks the
 * bytes it takes and the stack it pops before touching either, so any
 * input ends in STOP, a refusal, or the end of the input (refused as
 * truncated).  Each value is allocated once and registered in p->all,
 * which tfs_pickle_free() walks: values can be shared and cyclic, so
 * they are never freed through the tree.
 */
#include "pickle.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct machine {
	const unsigned char *b;
	size_t len, at;
	struct tfs_pickle *p;
	struct tfs_pickle_value **stack;
	size_t sn, scap;
	size_t *marks;
	size_t mn, mcap;
	struct tfs_pickle_value **memo;
	size_t memon;	/* slots allocated */
	size_t memoset; /* slots set: len(memo), for MEMOIZE */
	char *err;
	size_t errlen;
	int short_input; /* ran out of bytes before STOP */
};

static int fail(struct machine *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int fail(struct machine *m, const char *fmt, ...)
{
	va_list ap;

	if (m->err && m->errlen) {
		va_start(ap, fmt);
		vsnprintf(m->err, m->errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* Grow *arr (of *cap elements of size es) to hold need. */
static int grow(void *arr, size_t *cap, size_t need, size_t es)
{
	void **a = arr;
	size_t c = *cap ? *cap : 8;
	void *n;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	n = realloc(*a, c * es);
	if (!n)
		return -ENOMEM;
	*a = n;
	*cap = c;
	return 0;
}

/* ===== values ===== */

static struct tfs_pickle_value *value_new(struct machine *m,
					  enum tfs_pickle_type type)
{
	struct tfs_pickle *p = m->p;
	struct tfs_pickle_value *v;

	if (p->nall >= TFS_PICKLE_MAX_VALUES ||
	    grow(&p->all, &p->capall, p->nall + 1, sizeof(*p->all)))
		return NULL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	v->type = type;
	p->all[p->nall++] = v;
	return v;
}

static int item_add(struct tfs_pickle_value *v, struct tfs_pickle_value *it)
{
	if (grow(&v->items, &v->cap, v->n + 1, sizeof(*v->items)))
		return -ENOMEM;
	v->items[v->n++] = it;
	return 0;
}

/* The error of a failed value_new(). */
static int no_value(struct machine *m)
{
	if (m->p->nall >= TFS_PICKLE_MAX_VALUES) {
		fail(m, "more than %u values", TFS_PICKLE_MAX_VALUES);
		return -E2BIG;
	}
	return -ENOMEM;
}

/* ===== the stack ===== */

static int push(struct machine *m, struct tfs_pickle_value *v)
{
	if (!v)
		return no_value(m);
	if (m->sn >= TFS_PICKLE_MAX_VALUES)
		return fail(m, "the stack is deeper than %u",
			    TFS_PICKLE_MAX_VALUES);
	if (grow(&m->stack, &m->scap, m->sn + 1, sizeof(*m->stack)))
		return -ENOMEM;
	m->stack[m->sn++] = v;
	return 0;
}

/* The value n from the top (0: the top), or NULL if the stack (above
 * the last mark) is too shallow or it is a mark. */
static struct tfs_pickle_value *peek(struct machine *m, size_t n)
{
	size_t floor = m->mn ? m->marks[m->mn - 1] + 1 : 0;

	if (m->sn < floor + n + 1)
		return NULL;
	return m->stack[m->sn - 1 - n];
}

/* The stack position of the last mark, popped, or -1 (SIZE_MAX). */
static size_t pop_mark(struct machine *m)
{
	if (!m->mn)
		return SIZE_MAX;
	return m->marks[--m->mn];
}

/* ===== reading the input ===== */

static int need(struct machine *m, size_t n)
{
	if (m->len - m->at < n) {
		m->short_input = 1;
		return fail(m, "truncated at byte %zu", m->at);
	}
	return 0;
}

static uint64_t le(const unsigned char *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

/* A string of n bytes at the input as a value of type. */
static int push_string(struct machine *m, enum tfs_pickle_type type, uint64_t n)
{
	struct tfs_pickle_value *v;

	if (n > m->len - m->at) {
		m->short_input = 1;
		return fail(m,
			    "a string of %llu bytes runs past the end at "
			    "byte %zu",
			    (unsigned long long)n, m->at);
	}
	v = value_new(m, type);
	if (!v)
		return no_value(m);
	v->s = malloc((size_t)n + 1);
	if (!v->s)
		return -ENOMEM;
	memcpy(v->s, m->b + m->at, (size_t)n);
	v->s[n] = '\0';
	v->len = (size_t)n;
	m->at += (size_t)n;
	return push(m, v);
}

static int push_int(struct machine *m, enum tfs_pickle_type type, int64_t i)
{
	struct tfs_pickle_value *v = value_new(m, type);

	if (v)
		v->i = i;
	return push(m, v);
}

/* GLOBAL's "module\nname\n": pushed as "module.name". */
static int op_global(struct machine *m)
{
	const unsigned char *a = m->b + m->at, *nl1, *nl2;
	size_t left = m->len - m->at;
	struct tfs_pickle_value *v;

	nl1 = memchr(a, '\n', left);
	nl2 = nl1 ? memchr(nl1 + 1, '\n', left - (size_t)(nl1 + 1 - a)) : NULL;
	if (!nl2 || nl2 - a > 512) {
		m->short_input = !nl2 && left <= 512;
		return fail(m, "GLOBAL at byte %zu has no module and name",
			    m->at - 1);
	}
	v = value_new(m, TFS_PICKLE_GLOBAL);
	if (!v)
		return no_value(m);
	v->len = (size_t)(nl2 - a);
	v->s = malloc(v->len + 1);
	if (!v->s)
		return -ENOMEM;
	memcpy(v->s, a, v->len);
	v->s[nl1 - a] = '.';
	v->s[v->len] = '\0';
	for (size_t i = 0; i < v->len; i++)
		if (v->s[i] < 0x20 || v->s[i] > 0x7e)
			return fail(m,
				    "GLOBAL at byte %zu names no Python "
				    "object",
				    m->at - 1);
	m->at += v->len + 1;
	return push(m, v);
}

/* ===== containers ===== */

/* The values from the last mark up, popped into a new value of type
 * (TUPLE, LIST) or, with into, appended to it (pairs for a DICT). */
static int from_mark(struct machine *m, enum tfs_pickle_type type,
		     struct tfs_pickle_value *into)
{
	size_t mk = pop_mark(m);
	struct tfs_pickle_value *v = into;
	int rc;

	if (mk == SIZE_MAX)
		return fail(m, "no MARK before byte %zu", m->at - 1);
	if (!v && !(v = value_new(m, type)))
		return no_value(m);
	if (v->type == TFS_PICKLE_DICT && (m->sn - mk - 1) % 2)
		return fail(m, "an odd number of keys and values at byte %zu",
			    m->at - 1);
	for (size_t i = mk + 1; i < m->sn; i++) {
		rc = item_add(v, m->stack[i]);
		if (rc)
			return rc;
	}
	m->sn = mk; /* the mark too */
	return into ? 0 : push(m, v);
}

/* A tuple of the top n values. */
static int tuple_n(struct machine *m, size_t n)
{
	struct tfs_pickle_value *v;
	int rc;

	for (size_t i = 0; i < n; i++)
		if (!peek(m, i))
			return fail(m,
				    "TUPLE%zu at byte %zu on a stack of "
				    "fewer values",
				    n, m->at - 1);
	v = value_new(m, TFS_PICKLE_TUPLE);
	if (!v)
		return no_value(m);
	for (size_t i = n; i > 0; i--) {
		rc = item_add(v, m->stack[m->sn - i]);
		if (rc)
			return rc;
	}
	m->sn -= n;
	return push(m, v);
}

/* APPEND, SETITEM: the top one or two values into the container under
 * them. */
static int add_top(struct machine *m, enum tfs_pickle_type type, size_t n)
{
	struct tfs_pickle_value *c = peek(m, n);
	int rc;

	if (!c || c->type != type || !peek(m, 0) || (n == 2 && !peek(m, 1)))
		return fail(m, "%s at byte %zu on no %s",
			    n == 1 ? "APPEND" : "SETITEM", m->at - 1,
			    n == 1 ? "list" : "dict");
	for (size_t i = n; i > 0; i--) {
		rc = item_add(c, m->stack[m->sn - i]);
		if (rc)
			return rc;
	}
	m->sn -= n;
	return 0;
}

/* APPENDS, SETITEMS: from the mark up into the container under it. */
static int add_marked(struct machine *m, enum tfs_pickle_type type)
{
	size_t mk = m->mn ? m->marks[m->mn - 1] : SIZE_MAX;
	struct tfs_pickle_value *c;

	if (mk == SIZE_MAX || mk == 0)
		return fail(m,
			    "%s at byte %zu without a MARK above a "
			    "container",
			    type == TFS_PICKLE_LIST ? "APPENDS" : "SETITEMS",
			    m->at - 1);
	c = m->stack[mk - 1];
	if (c->type != type)
		return fail(m, "%s at byte %zu on no %s",
			    type == TFS_PICKLE_LIST ? "APPENDS" : "SETITEMS",
			    m->at - 1,
			    type == TFS_PICKLE_LIST ? "list" : "dict");
	return from_mark(m, type, c);
}

/* ===== calls, recorded ===== */

/* REDUCE, NEWOBJ: callable and args become a CALL, or a dict for
 * collections.OrderedDict(). */
static int op_call(struct machine *m, const char *op)
{
	struct tfs_pickle_value *args = peek(m, 0), *fn = peek(m, 1), *v;
	int rc;

	if (!args || !fn || args->type != TFS_PICKLE_TUPLE)
		return fail(m, "%s at byte %zu without a callable and a tuple",
			    op, m->at - 1);
	m->sn -= 2;
	if (fn->type == TFS_PICKLE_GLOBAL &&
	    !strcmp(fn->s, "collections.OrderedDict") && args->n == 0)
		return push(m, value_new(m, TFS_PICKLE_DICT));
	v = value_new(m, TFS_PICKLE_CALL);
	if (!v)
		return no_value(m);
	rc = item_add(v, fn);
	if (!rc)
		rc = item_add(v, args);
	if (!rc)
		rc = item_add(v, NULL);
	return rc ? rc : push(m, v);
}

/* BUILD: a CALL keeps its state; a dict's attributes (a state_dict's
 * _metadata) are dropped; anything else is malformed. */
static int op_build(struct machine *m)
{
	struct tfs_pickle_value *state = peek(m, 0), *obj = peek(m, 1);

	if (!state || !obj)
		return fail(m,
			    "BUILD at byte %zu without an object and a "
			    "state",
			    m->at - 1);
	if (obj->type == TFS_PICKLE_CALL)
		obj->items[2] = state;
	else if (obj->type != TFS_PICKLE_DICT)
		return fail(m, "BUILD at byte %zu on no object", m->at - 1);
	m->sn--;
	return 0;
}

static int op_persid(struct machine *m)
{
	struct tfs_pickle_value *pid = peek(m, 0), *v;
	int rc;

	if (!pid)
		return fail(m, "BINPERSID at byte %zu on an empty stack",
			    m->at - 1);
	v = value_new(m, TFS_PICKLE_PERSID);
	if (!v)
		return no_value(m);
	rc = item_add(v, pid);
	if (rc)
		return rc;
	m->stack[m->sn - 1] = v;
	return 0;
}

/* ===== the memo ===== */

static int memo_put(struct machine *m, uint64_t idx)
{
	struct tfs_pickle_value *v = peek(m, 0);
	size_t cap = m->memon;

	if (!v)
		return fail(m, "PUT at byte %zu on an empty stack", m->at);
	if (idx >= TFS_PICKLE_MAX_VALUES)
		return fail(m, "memo index %llu at byte %zu is beyond %u",
			    (unsigned long long)idx, m->at,
			    TFS_PICKLE_MAX_VALUES);
	if (idx >= m->memon) {
		if (grow(&m->memo, &cap, (size_t)idx + 1, sizeof(*m->memo)))
			return -ENOMEM;
		memset(m->memo + m->memon, 0,
		       (cap - m->memon) * sizeof(*m->memo));
		m->memon = cap;
	}
	if (!m->memo[idx])
		m->memoset++;
	m->memo[idx] = v;
	return 0;
}

static int memo_get(struct machine *m, uint64_t idx)
{
	if (idx >= m->memon || !m->memo[idx])
		return fail(m, "GET of memo %llu at byte %zu, never PUT",
			    (unsigned long long)idx, m->at);
	return push(m, m->memo[idx]);
}

/* ===== the opcodes ===== */

/* An integer argument of n bytes, little-endian, consumed. */
static int arg(struct machine *m, size_t n, uint64_t *v)
{
	int rc = need(m, n);

	if (rc)
		return rc;
	*v = le(m->b + m->at, n);
	m->at += n;
	return 0;
}

/* LONG1: n bytes of two's complement; up to 8 fit an int64. */
static int op_long1(struct machine *m)
{
	uint64_t n, v = 0;
	int rc = arg(m, 1, &n);

	if (rc || (rc = need(m, (size_t)n)))
		return rc;
	if (n > 8)
		return fail(m, "an integer of %llu bytes at byte %zu",
			    (unsigned long long)n, m->at);
	if (n) {
		v = le(m->b + m->at, (size_t)n);
		if (n < 8 && m->b[m->at + n - 1] & 0x80)
			v |= ~(uint64_t)0 << (8 * n);
	}
	m->at += (size_t)n;
	return push_int(m, TFS_PICKLE_INT, (int64_t)v);
}

static int op_binfloat(struct machine *m)
{
	struct tfs_pickle_value *v;
	uint64_t bits = 0;
	int rc = need(m, 8);

	if (rc)
		return rc;
	for (int i = 0; i < 8; i++) /* big-endian */
		bits = bits << 8 | m->b[m->at + (size_t)i];
	m->at += 8;
	v = value_new(m, TFS_PICKLE_FLOAT);
	if (v)
		memcpy(&v->f, &bits, 8);
	return push(m, v);
}

static int op_mark(struct machine *m)
{
	struct tfs_pickle_value *v = value_new(m, TFS_PICKLE_MARK);

	if (!v)
		return no_value(m);
	if (grow(&m->marks, &m->mcap, m->mn + 1, sizeof(*m->marks)))
		return -ENOMEM;
	m->marks[m->mn++] = m->sn;
	return push(m, v);
}

/* Strings and ints, by opcode; -ENOENT for another opcode. */
static int op_scalar(struct machine *m, unsigned char op)
{
	uint64_t v;
	int rc;

	switch (op) {
	case 'X': /* BINUNICODE */
	case 'T': /* BINSTRING */
	case 'B': /* BINBYTES */
		rc = arg(m, 4, &v);
		return rc ? rc
			  : push_string(m,
					op == 'B' ? TFS_PICKLE_BYTES
						  : TFS_PICKLE_STR,
					v);
	case 0x8c: /* SHORT_BINUNICODE */
	case 'U':  /* SHORT_BINSTRING */
	case 'C':  /* SHORT_BINBYTES */
		rc = arg(m, 1, &v);
		return rc ? rc
			  : push_string(m,
					op == 'C' ? TFS_PICKLE_BYTES
						  : TFS_PICKLE_STR,
					v);
	case 0x8d: /* BINUNICODE8 */
	case 0x8e: /* BINBYTES8 */
		rc = arg(m, 8, &v);
		return rc ? rc
			  : push_string(m,
					op == 0x8e ? TFS_PICKLE_BYTES
						   : TFS_PICKLE_STR,
					v);
	case 'J': /* BININT */
		rc = arg(m, 4, &v);
		return rc ? rc
			  : push_int(m, TFS_PICKLE_INT, (int32_t)(uint32_t)v);
	case 'K': /* BININT1 */
		rc = arg(m, 1, &v);
		return rc ? rc : push_int(m, TFS_PICKLE_INT, (int64_t)v);
	case 'M': /* BININT2 */
		rc = arg(m, 2, &v);
		return rc ? rc : push_int(m, TFS_PICKLE_INT, (int64_t)v);
	case 0x8a: /* LONG1 */
		return op_long1(m);
	case 'G': /* BINFLOAT */
		return op_binfloat(m);
	case 'N': /* NONE */
		return push(m, value_new(m, TFS_PICKLE_NONE));
	case 0x88: /* NEWTRUE */
	case 0x89: /* NEWFALSE */
		return push_int(m, TFS_PICKLE_BOOL, op == 0x88);
	default:
		return -ENOENT;
	}
}

/* Containers, the memo and the stack, by opcode; -ENOENT for another. */
static int op_structure(struct machine *m, unsigned char op)
{
	uint64_t v;
	int rc;

	switch (op) {
	case '(': /* MARK */
		return op_mark(m);
	case '}': /* EMPTY_DICT */
		return push(m, value_new(m, TFS_PICKLE_DICT));
	case ']': /* EMPTY_LIST */
		return push(m, value_new(m, TFS_PICKLE_LIST));
	case ')': /* EMPTY_TUPLE */
		return push(m, value_new(m, TFS_PICKLE_TUPLE));
	case 't': /* TUPLE */
		return from_mark(m, TFS_PICKLE_TUPLE, NULL);
	case 'l': /* LIST */
		return from_mark(m, TFS_PICKLE_LIST, NULL);
	case 'd': /* DICT */
		return from_mark(m, TFS_PICKLE_DICT, NULL);
	case 0x85: /* TUPLE1 */
	case 0x86: /* TUPLE2 */
	case 0x87: /* TUPLE3 */
		return tuple_n(m, (size_t)(op - 0x84));
	case 'a': /* APPEND */
		return add_top(m, TFS_PICKLE_LIST, 1);
	case 's': /* SETITEM */
		return add_top(m, TFS_PICKLE_DICT, 2);
	case 'e': /* APPENDS */
		return add_marked(m, TFS_PICKLE_LIST);
	case 'u': /* SETITEMS */
		return add_marked(m, TFS_PICKLE_DICT);
	case 'h': /* BINGET */
	case 'j': /* LONG_BINGET */
		rc = arg(m, op == 'h' ? 1 : 4, &v);
		return rc ? rc : memo_get(m, v);
	case 'q': /* BINPUT */
	case 'r': /* LONG_BINPUT */
		rc = arg(m, op == 'q' ? 1 : 4, &v);
		return rc ? rc : memo_put(m, v);
	case 0x94: /* MEMOIZE */
		return memo_put(m, m->memoset);
	case '0': /* POP */
		if (!peek(m, 0))
			return fail(m, "POP at byte %zu on an empty stack",
				    m->at - 1);
		m->sn--;
		return 0;
	case '2': /* DUP */
		return peek(m, 0) ? push(m, peek(m, 0))
				  : fail(m, "DUP at byte %zu on an empty stack",
					 m->at - 1);
	case '1': /* POP_MARK */
		v = pop_mark(m);
		if (v == SIZE_MAX)
			return fail(m, "POP_MARK at byte %zu without a MARK",
				    m->at - 1);
		m->sn = (size_t)v;
		return 0;
	default:
		return -ENOENT;
	}
}

/* Protocol, globals and calls, by opcode; -ENOENT for another. */
static int op_other(struct machine *m, unsigned char op)
{
	uint64_t v;
	int rc;

	switch (op) {
	case 0x80: /* PROTO */
		rc = arg(m, 1, &v);
		if (!rc && v > 5)
			rc = fail(m,
				  "pickle protocol %llu is not one Python "
				  "writes",
				  (unsigned long long)v);
		return rc;
	case 0x95: /* FRAME: only a hint of the length */
		return arg(m, 8, &v);
	case 'c': /* GLOBAL */
		return op_global(m);
	case 0x93: { /* STACK_GLOBAL */
		struct tfs_pickle_value *n = peek(m, 0), *mod = peek(m, 1), *g;
		size_t len;

		if (!n || !mod || n->type != TFS_PICKLE_STR ||
		    mod->type != TFS_PICKLE_STR || n->len + mod->len > 512)
			return fail(m,
				    "STACK_GLOBAL at byte %zu without a "
				    "module and a name",
				    m->at - 1);
		g = value_new(m, TFS_PICKLE_GLOBAL);
		if (!g)
			return no_value(m);
		len = mod->len + 1 + n->len;
		g->s = malloc(len + 1);
		if (!g->s)
			return -ENOMEM;
		snprintf(g->s, len + 1, "%s.%s", mod->s, n->s);
		g->len = strlen(g->s);
		m->sn -= 2;
		return push(m, g);
	}
	case 'R': /* REDUCE */
		return op_call(m, "REDUCE");
	case 0x81: /* NEWOBJ */
		return op_call(m, "NEWOBJ");
	case 'b': /* BUILD */
		return op_build(m);
	case 'Q': /* BINPERSID */
		return op_persid(m);
	default:
		return -ENOENT;
	}
}

/* The opcodes refused, by name, for the message. */
static const char *op_name(unsigned char op)
{
	switch (op) {
	case 'I':
		return "INT (protocol 0)";
	case 'L':
		return "LONG (protocol 0)";
	case 'F':
		return "FLOAT (protocol 0)";
	case 'S':
		return "STRING (protocol 0)";
	case 'V':
		return "UNICODE (protocol 0)";
	case 'P':
		return "PERSID (protocol 0)";
	case 'p':
		return "PUT (protocol 0)";
	case 'g':
		return "GET (protocol 0)";
	case 'i':
		return "INST";
	case 'o':
		return "OBJ";
	case 0x82:
		return "EXT1";
	case 0x83:
		return "EXT2";
	case 0x84:
		return "EXT4";
	case 0x8b:
		return "LONG4";
	case 0x8f:
		return "EMPTY_SET";
	case 0x90:
		return "ADDITEMS";
	case 0x91:
		return "FROZENSET";
	case 0x92:
		return "NEWOBJ_EX";
	case 0x96:
		return "BYTEARRAY8";
	case 0x97:
		return "NEXT_BUFFER";
	case 0x98:
		return "READONLY_BUFFER";
	default:
		return "unknown";
	}
}

static int load(struct machine *m)
{
	for (;;) {
		unsigned char op;
		int rc;

		if (need(m, 1))
			return fail(m, "no STOP: truncated at byte %zu", m->at);
		op = m->b[m->at++];
		if (op == '.') { /* STOP */
			if (m->sn != 1 || m->mn || !peek(m, 0))
				return fail(m,
					    "STOP at byte %zu with %zu "
					    "values on the stack, not one",
					    m->at - 1, m->sn);
			m->p->root = m->stack[0];
			return 0;
		}
		rc = op_scalar(m, op);
		if (rc == -ENOENT)
			rc = op_structure(m, op);
		if (rc == -ENOENT)
			rc = op_other(m, op);
		if (rc == -ENOENT)
			return fail(m,
				    "opcode 0x%02x (%s) at byte %zu is not "
				    "one torch.save writes; refusing it",
				    op, op_name(op), m->at - 1);
		if (rc)
			return rc;
	}
}

int tfs_pickle_load_part(const void *buf, size_t len, struct tfs_pickle **out,
			 size_t *used, char *err, size_t errlen)
{
	struct machine m = {
		.b = buf, .len = len, .err = err, .errlen = errlen
	};
	int rc;

	*out = NULL;
	m.p = calloc(1, sizeof(*m.p));
	if (!m.p)
		return -ENOMEM;
	rc = load(&m);
	if (rc == -ENOMEM && err && errlen)
		snprintf(err, errlen, "out of memory");
	if (rc == -EINVAL && m.short_input)
		rc = -ENODATA;
	free(m.stack);
	free(m.marks);
	free(m.memo);
	if (rc) {
		tfs_pickle_free(m.p);
		return rc;
	}
	*out = m.p;
	if (used)
		*used = m.at;
	return 0;
}

int tfs_pickle_load(const void *buf, size_t len, struct tfs_pickle **out,
		    char *err, size_t errlen)
{
	int rc = tfs_pickle_load_part(buf, len, out, NULL, err, errlen);

	return rc == -ENODATA ? -EINVAL : rc;
}

void tfs_pickle_free(struct tfs_pickle *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nall; i++) {
		free(p->all[i]->s);
		free(p->all[i]->items);
		free(p->all[i]);
	}
	free(p->all);
	free(p);
}
