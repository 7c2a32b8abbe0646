/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_STACK_H
#define FSTRIM_EXT_STACK_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Where the bytes of a block device lie: its device-mapper layers,
 * followed down through their tables (libdevmapper) to the device below
 * them all, which is what a reader of the disk reads. A read back that
 * proves an erase reads there.
 */
enum stack_kind {
	STACK_NONE, /* no device-mapper layer: the device is the bottom */
	STACK_MAPPED, /* linear and crypt targets, one a layer: byte x of
			 * the device is byte @offset + x of @bottom */
	STACK_UNMAPPED, /* a layer fstrim-ext cannot map (@layer, @target) */
};

struct storage_stack {
	enum stack_kind kind;
	bool encrypted; /* a crypt layer: the device reads the decryption of
			 * what @bottom holds, and @bottom a discard's zeroes */
	unsigned int layers; /* device-mapper layers followed */
	char bottom[PATH_MAX]; /* STACK_MAPPED: the device below them all */
	dev_t bottom_dev;
	uint64_t offset; /* bytes */
	char layer[96]; /* STACK_UNMAPPED: "dm-3 (vg-pool)" */
	char target[64]; /* its target type, "thin", "raid", "2 linear segments" */
};

/*
 * Describe the stack below the block device @dev into @s. Returns 0, or
 * -errno when a layer's table cannot be read (then @s says STACK_UNMAPPED
 * with that layer).
 */
int stack_describe(dev_t dev, struct storage_stack *s);

/*
 * One device-mapper table line's target, as the kernel shows it:
 * @type and @params ("253:0 2048" for linear, "aes-xts-plain64 KEY 0
 * 8:16 4096 1 allow_discards" for crypt). Sets the device below and
 * the offset there in sectors. Returns 0, or -EINVAL when the target is
 * not linear or crypt or its parameters do not parse. Exposed for the
 * unit test.
 */
int stack_parse_target(const char *type, const char *params, dev_t *below,
		       uint64_t *sectors);

#endif
