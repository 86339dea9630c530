#!/bin/sh
# The bounds of a powerpc vDSO image's fixup tables, as the #define lines
# arch/powerpc/kernel/vdso.c reads through VDSO64_SYMBOL() and
# VDSO32_SYMBOL() (docs/kernel/powerpc/Makefile.vdsogen).
#
#   readelf -SW vdso64.so.dbg | sh vdsogen-fixups.sh vdso64
#
# Each table is the section of its name (__ftr_fixup, __mmu_ftr_fixup,
# __lwsync_fixup, __fw_ftr_fixup): PREFIX_offset_TABLE_start is its address
# (an offset from the image's start: a vDSO links at 0) and _end that plus
# its size.  A table the image lacks gets 0 and 0, which do_*_fixups()
# walk as empty.
prefix=${1:?usage: readelf -SW IMAGE | sh vdsogen-fixups.sh PREFIX}
LC_ALL=C awk -v prefix="$prefix" '
	function hex(h,  v, i) {
		v = 0
		for (i = 1; i <= length(h); i++)
			v = v * 16 + index("0123456789abcdef", tolower(substr(h, i, 1))) - 1
		return v
	}
	# "[Nr] Name Type Address Off Size ...": "[ 1]" splits in two, so find the name.
	/^ *\[/ {
		for (i = 1; i < NF; i++)
			if ($i ~ /^__(ftr|mmu_ftr|lwsync|fw_ftr)_fixup$/) {
				addr[$i] = $(i + 2)
				size[$i] = $(i + 4)
			}
	}
	END {
		n = split("ftr_fixup mmu_ftr_fixup lwsync_fixup fw_ftr_fixup", table, " ")
		for (t = 1; t <= n; t++) {
			s = "__" table[t]
			start = (s in addr) ? hex(addr[s]) : 0
			end = (s in addr) ? start + hex(size[s]) : 0
			printf "#define %s_offset_%s_start\t0x%x\n", prefix, table[t], start
			printf "#define %s_offset_%s_end\t0x%x\n", prefix, table[t], end
		}
	}'
