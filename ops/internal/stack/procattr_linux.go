package stack

import (
	"os/exec"
	"syscall"
)

// orphanProof has the kernel kill cmd's program when the process that
// started it dies (a test binary that times out runs no cleanup), so that
// no server outlives its test.
func orphanProof(cmd *exec.Cmd) *exec.Cmd {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}
