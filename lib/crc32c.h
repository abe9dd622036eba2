/*
 * crc32c.h: CRC-32C (Castagnoli), the checksum of every metadata block.
 */
#ifndef TFS_CRC32C_H
#define TFS_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continue a CRC-32C over buf.  Start with crc = 0; the result of one call
 * may be passed as crc to the next to checksum a stream in pieces.
 * tfs_crc32c(0, "123456789", 9) == 0xe3069283.  Thread safe. */
uint32_t tfs_crc32c(uint32_t crc, const void *buf, size_t len);

#endif
