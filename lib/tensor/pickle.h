/*
 * pickle.h: a Python pickle read as data, never run: the opcodes that
 * torch.save writes (protocol 2, and the few of 3 and 4 that newer
 * writers add), turned into a tree of values.
 *
 * Nothing is imported and nothing is called.  A GLOBAL is only a name
 * ("collections.OrderedDict"); REDUCE, NEWOBJ and BUILD record what the
 * unpickler would have called and with what, as a TFS_PICKLE_CALL value,
 * for the caller to interpret (torch.c reads _rebuild_tensor_v2 calls as
 * tensors).  One callable is understood here, because it is the dict
 * type of every state_dict: collections.OrderedDict() becomes a dict.
 * BINPERSID records the persistent id (torch's storage tuple) as a
 * TFS_PICKLE_PERSID.  Any other opcode is refused with its name.
 *
 * Bounds: at most TFS_PICKLE_MAX_VALUES values and memo slots, and a
 * value's items grow only by what the input pushes, so memory stays a
 * small multiple of the pickle's length.  The tree may share values (a
 * memo BINGET) and even hold cycles (a list appended to itself): walk it
 * with a depth limit.
 */
#ifndef TFS_PICKLE_H
#define TFS_PICKLE_H

#include <stddef.h>
#include <stdint.h>

enum tfs_pickle_type {
	TFS_PICKLE_NONE,
	TFS_PICKLE_BOOL,   /* i: 0 or 1 */
	TFS_PICKLE_INT,	   /* i (LONG1 up to 8 bytes) */
	TFS_PICKLE_FLOAT,  /* f */
	TFS_PICKLE_STR,	   /* s, len (str: UTF-8; bytes: as they are) */
	TFS_PICKLE_BYTES,  /* s, len */
	TFS_PICKLE_TUPLE,  /* items[n] */
	TFS_PICKLE_LIST,   /* items[n] */
	TFS_PICKLE_DICT,   /* items[2n]: key, value, key, value... */
	TFS_PICKLE_GLOBAL, /* s: "module.name" */
	TFS_PICKLE_CALL,   /* items[0] callable, [1] args, [2] BUILD state
			      or NULL (n is 3) */
	TFS_PICKLE_PERSID, /* items[0]: the persistent id (n is 1) */
	TFS_PICKLE_MARK	   /* on the stack only */
};

struct tfs_pickle_value {
	enum tfs_pickle_type type;
	int64_t i;
	double f;
	char *s; /* NUL-terminated as well */
	size_t len;
	struct tfs_pickle_value **items;
	size_t n, cap;
};

/* A loaded pickle: root is borrowed from it, freed with it. */
struct tfs_pickle {
	struct tfs_pickle_value *root;
	struct tfs_pickle_value **all; /* every value, for freeing */
	size_t nall, capall;
};

#define TFS_PICKLE_MAX_VALUES (1u << 22)

/*
 * Read the pickle in buf[0..len) up to its STOP.  On success returns 0
 * and *out (caller frees with tfs_pickle_free()); else *out is NULL and
 * returns -EINVAL (malformed, or an opcode not read: err names it and
 * its offset), -E2BIG (more values than the limit) or -ENOMEM.  Any
 * bytes are safe to pass.  Thread safe.
 */
int tfs_pickle_load(const void *buf, size_t len, struct tfs_pickle **out,
		    char *err, size_t errlen);

/*
 * The same for a pickle followed by other bytes (the legacy torch.save
 * format is several pickles, then data): on success *used is its length,
 * up to and including its STOP.  Returns -ENODATA, not -EINVAL, when buf
 * ends before the STOP, or before a string or name it started, so that a
 * caller reading a file can read more and try again.
 */
int tfs_pickle_load_part(const void *buf, size_t len, struct tfs_pickle **out,
			 size_t *used, char *err, size_t errlen);

void tfs_pickle_free(struct tfs_pickle *p);

#endif
