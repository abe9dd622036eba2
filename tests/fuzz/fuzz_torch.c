/*
 * fuzz_torch.c: a whole file through the one door into tensor files
 * (tfs_tensor_read(), lib/tensor/read.c): torch.save of either format
 * (torch.c, through zip.c and pickle.c), np.savez (npz.c), .npy and
 * .safetensors (tensor.c): any bytes end in a list, raw, or an error.
 * Seeds: tests/data/torch and tests/data/npz (tools/fuzz.sh).
 */
#include <stddef.h>
#include <stdint.h>

#include "read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfs_zip_mem m = { data, size };
	struct tfs_tensor_list *l = NULL;
	char err[256];

	if (!tfs_tensor_read(tfs_zip_read_mem, &m, size, 1u << 20, &l, NULL,
			     err, sizeof(err)))
		tfs_tensor_list_free(l);
	return 0;
}
