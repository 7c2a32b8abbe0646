/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_SIZES_H
#define FSTRIM_EXT_SIZES_H

#include <stdint.h>

/*
 * Parse a size as util-linux does: an unsigned number (decimal, 0x hex or
 * 0 octal), optionally a fraction and a suffix K M G T P E (binary,
 * also written KiB) or KB MB ... (decimal). Returns 0, -EINVAL for
 * malformed or negative input, -ERANGE when it does not fit 64 bits.
 */
int size_parse(const char *str, uint64_t *res);

/*
 * Write "1.1 KiB", "23 MiB", "0 B" into buf: powers of 1024, one
 * decimal rounded half up from three, ".0" dropped. Returns buf.
 */
char *size_to_human(uint64_t bytes, char *buf, size_t bufsz);

#define SIZE_HUMAN_MAX 32

#endif
