// Package wire reads the API server's list and watch responses down to the
// few fields of object metadata the probe uses — namespace, name, UID,
// resource version, generation, an observed generation where asked, and
// the initial-events-end annotation of a watch-list's last bookmark —
// without materialising objects: managed fields, labels, annotations,
// owner references and bodies are skipped where they lie. It reads both
// formats the API server speaks to a metadata client, JSON and
// Kubernetes protobuf, and a list as a stream, item by item, so that a list
// of any length is never held in memory at once.
//
// A WatchDecoder reads one watch event per call into an Event whose byte
// slices point into its buffer (valid until the next call): reading the
// fields allocates nothing. DecodeList calls a function per item of a
// list and returns the list's metadata.
//
// The package imports only the standard library: what the wire carries is
// turned into the client's types (errors, objects) by the caller.
package wire
