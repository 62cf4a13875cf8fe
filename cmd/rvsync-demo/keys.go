package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// readKeys delivers the keys typed on the terminal f one by one, without
// waiting for Enter and without echo; output and Ctrl-C work as before.
// restore gives the terminal its settings back. When f is not a terminal
// it returns a nil channel (no keys) and ok false.
func readKeys(f *os.File) (keys <-chan byte, restore func(), ok bool) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, func() {}, false
	}
	raw := *old
	raw.Lflag &^= unix.ICANON | unix.ECHO
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return nil, func() {}, false
	}
	ch := make(chan byte)
	go func() {
		b := make([]byte, 1)
		for {
			if n, err := f.Read(b); err != nil {
				return
			} else if n == 1 {
				ch <- b[0]
			}
		}
	}()
	return ch, func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }, true
}
