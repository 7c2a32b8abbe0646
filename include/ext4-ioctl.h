/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The journal checkpoint ioctls, for userspace.
 *
 * Debian 12's kernel headers define neither: EXT4_IOC_CHECKPOINT entered
 * the UAPI headers with Linux 6.4 (the ioctl itself with 5.14), and
 * FS_IOC_CHKPT_JRNL exists only with the patch series in kernel/.
 * Their numbers differ in the encoded argument size, so a patched
 * kernel offers both.
 */
#ifndef FSTRIM_EXT_EXT4_IOCTL_H
#define FSTRIM_EXT_EXT4_IOCTL_H

#include <linux/ioctl.h>
#include <linux/types.h>

#ifndef FS_IOC_CHKPT_JRNL
#define FS_IOC_CHKPT_JRNL _IOW('f', 43, __u64)
#endif
/* the values of EXT4_IOC_CHECKPOINT's flags */
#ifndef CHKPT_JRNL_DO_DISCARD
#define CHKPT_JRNL_DO_DISCARD 0x1ULL
#endif
#ifndef CHKPT_JRNL_DO_ZEROOUT
#define CHKPT_JRNL_DO_ZEROOUT 0x2ULL
#endif
#ifndef CHKPT_JRNL_DRY_RUN
#define CHKPT_JRNL_DRY_RUN 0x4ULL
#endif
/*
 * The series' first versions had no zeroout and read 0x2 as the dry run.
 * A kernel that advertises EXT4_FEATURE_CHKPT_JRNL_ZEROOUT has the values
 * above; on any other, 0x2 is the dry run.
 */
#define CHKPT_JRNL_DRY_RUN_OLD 0x2ULL

#ifndef EXT4_IOC_CHECKPOINT
#define EXT4_IOC_CHECKPOINT _IOW('f', 43, __u32)
#endif
#ifndef EXT4_IOC_CHECKPOINT_FLAG_DISCARD
#define EXT4_IOC_CHECKPOINT_FLAG_DISCARD 0x1U
#define EXT4_IOC_CHECKPOINT_FLAG_ZEROOUT 0x2U
#define EXT4_IOC_CHECKPOINT_FLAG_DRY_RUN 0x4U
#endif

/* Files the bundled kernel series adds to advertise its fixes. */
#define EXT4_FEATURES_DIR "/sys/fs/ext4/features"
#define EXT4_FEATURE_CHKPT_JRNL "chkpt_jrnl"
#define EXT4_FEATURE_CHKPT_JRNL_ZEROOUT "chkpt_jrnl_zeroout"
#define EXT4_FEATURE_JBD2_ERASE_FIX "jbd2_erase_fix"
#define EXT4_FEATURE_DIRENT_PACK_WIPE "dirent_pack_wipe"
/*
 * A kernel whose journal checkpoint cannot deadlock with a fast commit
 * (an fsync in jbd2_fc_begin_commit() waiting on the checkpoint's
 * j_barrier while the checkpoint's commit waits for that fast commit):
 * mainline, 6.1 and 6.12 have the deadlock. Until a kernel advertises
 * the fix here, the journal step is not done on a fast_commit filesystem.
 */
#define EXT4_FEATURE_FC_CHECKPOINT_FIX "jbd2_fc_checkpoint_fix"
/*
 * After a journal flush (a checkpoint, a freeze) jbd2 leaves s_start 0
 * until the next full commit, and recovery then replays nothing: fast
 * commits made in between, fsyncs that returned, are not replayed after
 * a crash (mainline; fast commits are refused before the first full
 * commit of a mount for this reason, but not after a flush). A kernel
 * that falls back to a full commit there advertises this file.
 */
#define EXT4_FEATURE_FC_FLUSH_FIX "jbd2_fc_flush_fix"

#endif /* FSTRIM_EXT_EXT4_IOCTL_H */
