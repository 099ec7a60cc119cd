//go:build !linux

package stack

import "os/exec"

// orphanProof returns cmd as it is: only Linux kills a program when the
// process that started it dies.
func orphanProof(cmd *exec.Cmd) *exec.Cmd { return cmd }
