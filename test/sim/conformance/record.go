package conformance

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Format renders a record as the lines of a recording (testdata/*.real):
// one observation a line, tab-separated: step, milliseconds after the step
// began, stream ("-" for requests), milliseconds after its watch opened,
// kind, text, and the resource version as served (for the reader; never
// compared). A line "# step N MS" says when step N began.
func (r *Record) Format() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s: what a client observed; step\tafter ms\tstream\tsince open ms\tkind\ttext\trv\n", r.Script.Name)
	for i, at := range r.StepAt {
		fmt.Fprintf(&b, "# step %d %d %s\n", i, at.Milliseconds(), r.Script.Steps[i])
	}
	for _, o := range r.Observations {
		stream := o.Stream
		if stream == "" {
			stream = "-"
		}
		fmt.Fprintf(&b, "%d\t%d\t%s\t%d\t%s\t%s\t%s\n", o.Step, o.After.Milliseconds(), stream, o.SinceOpen.Milliseconds(), o.Kind, o.Text, o.RV)
	}
	return b.Bytes()
}

// ParseRecord reads a recording that Format wrote, of script.
func ParseRecord(script Script, data []byte) (*Record, error) {
	r := &Record{Script: script}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		var step, ms int
		if _, err := fmt.Sscanf(line, "# step %d %d", &step, &ms); err == nil {
			if step != len(r.StepAt) {
				return nil, fmt.Errorf("line %d: step %d out of order", n, step)
			}
			r.StepAt = append(r.StepAt, time.Duration(ms)*time.Millisecond)
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 7 {
			return nil, fmt.Errorf("line %d: %d fields, want 7", n, len(f))
		}
		var ints [3]int
		for i, s := range []string{f[0], f[1], f[3]} {
			v, err := strconv.Atoi(s)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			ints[i] = v
		}
		o := Observation{Step: ints[0], After: time.Duration(ints[1]) * time.Millisecond, Stream: f[2],
			SinceOpen: time.Duration(ints[2]) * time.Millisecond, Kind: f[4], Text: f[5], RV: f[6]}
		if o.Stream == "-" {
			o.Stream = ""
		}
		r.Observations = append(r.Observations, o)
	}
	return r, sc.Err()
}
