/*
 * The x86-64 vDSO image as vdsogen built it, described to the kernel's
 * mapping code (arch/x86/entry/vdso/vma.c) as vdso2c would have described
 * its own: the image, padded to whole pages, where the four vvar pages sit
 * below its text, and its alternatives, which init_vdso_image() applies to
 * the array.  vdsogen/vdso-image.c (vdsogen build --emit=c) holds the image
 * as vdso_start[], writable until mark_rodata_ro() (__ro_after_init), and
 * includes vdso-offsets.h, whose offsets vdsogen read from the image it
 * built.  The image has no exception table (no SGX entry point).
 */
#include <linux/cache.h>
#include <asm/vdso.h>
#include "vdsogen/vdso-image.c"

const struct vdso_image vdso_image_64 = {
	.data			= vdso_start,
	.size			= vdso_image_size,
	.alt			= vdso_alt,
	.alt_len		= vdso_alt_len,
	.sym_vvar_start		= vdso_data_offset,
	.sym_vvar_page		= vdso_page_time,
	.sym_pvclock_page	= vdso_page_pvclock,
	.sym_hvclock_page	= vdso_page_hvclock,
	.sym_timens_page	= vdso_page_timens,
};
