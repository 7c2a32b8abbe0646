/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_DEVNO_H
#define FSTRIM_EXT_DEVNO_H

#include <stdint.h>
#include <sys/sysmacros.h>
#include <sys/types.h>

/*
 * A device number in the kernel's 32-bit encoding (new_encode_dev(): the
 * minor's low byte, the major, then the minor's other bits), as root=HEX
 * on the kernel command line and ext4's s_journal_dev hold it.
 */
static inline dev_t devno_decode_kernel(uint32_t n)
{
	return makedev((n & 0xfff00) >> 8, (n & 0xff) | ((n >> 12) & 0xfff00));
}

#endif /* FSTRIM_EXT_DEVNO_H */
