/*
 * fuzz_zip.c: a zip directory (lib/tensor/zip.c), then a lookup of each
 * entry by name.
 */
#include <stddef.h>
#include <stdint.h>

#include "zip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfs_zip_mem m = {data, size};
	struct tfs_zip *z = NULL;
	char err[256];

	if (tfs_zip_open(tfs_zip_read_mem, &m, size, &z, err, sizeof(err)))
		return 0;
	for (size_t i = 0; i < z->count; i++)
		if (tfs_zip_find(z, z->entries[i].name) == NULL)
			__builtin_trap();
	tfs_zip_free(z);
	return 0;
}
