package transporttest

import (
	"strings"
	"sync"
)

// SyncBuffer is a text buffer safe for a logger that writes on other
// goroutines (a server's, a timer's) while a test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	sb strings.Builder
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sb.Write(p)
}

// String returns what was written.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sb.String()
}
