package readbatch

import "syscall"

// setLowWater sets the socket's receive low-water mark: poll, and so Go's
// network poller, reports it readable only once this many bytes arrived
// (or it was closed); a non-blocking read returns what is there.
func setLowWater(raw syscall.RawConn, bytes int) error {
	var err error
	if cerr := raw.Control(func(fd uintptr) {
		err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, bytes)
	}); cerr != nil {
		return cerr
	}
	return err
}
