//go:build !linux

package readbatch

import (
	"errors"
	"syscall"
)

// setLowWater is Linux's only: elsewhere a Conn batches its reads without
// holding back the wake-ups of what arrives meanwhile.
func setLowWater(syscall.RawConn, int) error { return errors.ErrUnsupported }
