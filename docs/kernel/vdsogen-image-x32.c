/*
 * The x32 vDSO image as vdsogen built it (CONFIG_X86_X32_ABI), described to
 * the kernel as vdso2c would have described its own
 * (docs/kernel/vdsogen-image-64.c says how).
 */
#include <linux/cache.h>
#include <asm/vdso.h>
#include "vdsogenx32/vdso-image.c"

const struct vdso_image vdso_image_x32 = {
	.data			= vdsox32_start,
	.size			= vdsox32_image_size,
	.alt			= vdsox32_alt,
	.alt_len		= vdsox32_alt_len,
	.sym_vvar_start		= vdsox32_data_offset,
	.sym_vvar_page		= vdsox32_page_time,
	.sym_pvclock_page	= vdsox32_page_pvclock,
	.sym_hvclock_page	= vdsox32_page_hvclock,
	.sym_timens_page	= vdsox32_page_timens,
};
