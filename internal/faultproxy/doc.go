// Package faultproxy is a TCP proxy for tests that sits between a client and
// the API server and injects faults into the bytes it forwards: a fixed added
// latency, a stall that holds every connection open while forwarding nothing
// (the half-open connection of a stuck watch), and a reset of every
// connection. It knows nothing of TLS or HTTP: the client's TLS session runs
// through it unchanged.
package faultproxy
