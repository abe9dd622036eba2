/*
 * fuzz_npy.c: a .npy header (tfs_tensor_parse_npy in lib/tensor/tensor.c),
 * with the file size unknown and equal to the input.
 */
#include <stddef.h>
#include <stdint.h>

#include "read.h"
#include "tensor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfs_tensor_list *l = NULL;
	char err[256];

	if (!tfs_tensor_parse_npy(data, size, UINT64_MAX, &l, err, sizeof(err)))
		tfs_tensor_list_free(l);
	if (!tfs_tensor_parse_npy(data, size, size, &l, err, sizeof(err)))
		tfs_tensor_list_free(l);
	/* and through the door, as files reach the parser */
	{
		struct tfs_zip_mem m = { data, size };

		if (!tfs_tensor_read(tfs_zip_read_mem, &m, size, 0, &l, NULL,
				     err, sizeof(err)))
			tfs_tensor_list_free(l);
	}
	return 0;
}
