package mcpadapter

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"unsafe"
)

// sysProcAttr puts the program in its own process group and has the
// kernel kill it if mcpd dies (Pdeathsig; the supervisor keeps the thread
// that started it, see supervise).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func unsafePointer(p *[128]byte) unsafe.Pointer { return unsafe.Pointer(p) }

// zombie reports whether /proc says pid has exited.
func zombie(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(data), ')')
	return i < 0 || i+2 >= len(data) || strings.ContainsRune("ZXx", rune(data[i+2]))
}
