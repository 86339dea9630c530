// A consumer of the vDSO's getrandom through Go's runtime
// (tests/test_getrandom_consumers.py): Go 1.24+ answers crypto/rand from the
// vDSO when it exports getrandom under the name and version node of Linux's
// (amd64, arm64, ppc64, ppc64le, s390x, loong64), with a state per thread
// mapped as the vDSO's opaque-state query says; elsewhere, or when that
// mapping fails, from the getrandom syscall.
//
//	getrandom-consumer N	N reads of 16 bytes, then "calls N last HEX" (the last 16 bytes)
package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
)

func main() {
	n := -1
	if len(os.Args) == 2 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	if n < 1 {
		fmt.Fprintln(os.Stderr, "usage: getrandom-consumer N")
		os.Exit(2)
	}
	b := make([]byte, 16)
	for i := 0; i < n; i++ {
		if _, err := rand.Read(b); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	fmt.Printf("calls %d last %s\n", n, hex.EncodeToString(b))
}
