/*
 * The i386 vDSO image as vdsogen built it (a 64-bit kernel's compat vDSO,
 * CONFIG_COMPAT_32), described to the kernel as vdso2c would have
 * described its own (docs/kernel/vdsogen-image-64.c says how): besides the
 * pages and alternatives, the entry the kernel gives 32-bit tasks
 * (AT_SYSINFO: __kernel_vsyscall), the signal trampolines and the landing
 * pads after their int $0x80, which vdsogen writes as kernel labels.
 */
#include <linux/cache.h>
#include <asm/vdso.h>
#include "vdsogen32/vdso-image.c"

const struct vdso_image vdso_image_32 = {
	.data				= vdso32_start,
	.size				= vdso32_image_size,
	.alt				= vdso32_alt,
	.alt_len			= vdso32_alt_len,
	.sym_vvar_start			= vdso32_data_offset,
	.sym_vvar_page			= vdso32_page_time,
	.sym_pvclock_page		= vdso32_page_pvclock,
	.sym_hvclock_page		= vdso32_page_hvclock,
	.sym_timens_page		= vdso32_page_timens,
	.sym___kernel_sigreturn		= vdso32_offset___kernel_sigreturn,
	.sym___kernel_rt_sigreturn	= vdso32_offset___kernel_rt_sigreturn,
	.sym___kernel_vsyscall		= vdso32_offset___kernel_vsyscall,
	.sym_int80_landing_pad		= vdso32_offset_int80_landing_pad,
	.sym_vdso32_sigreturn_landing_pad	= vdso32_offset_vdso32_sigreturn_landing_pad,
	.sym_vdso32_rt_sigreturn_landing_pad	= vdso32_offset_vdso32_rt_sigreturn_landing_pad,
};
