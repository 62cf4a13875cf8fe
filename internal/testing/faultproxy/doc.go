// Package faultproxy puts a fault injector between a client and the API
// server for tests.
//
// Proxy works on TCP: a fixed added latency, a stall that holds every
// connection open while forwarding nothing (the half-open connection of a
// stuck watch), and a reset of every connection. It knows nothing of TLS or
// HTTP: the client's TLS session runs through it unchanged, and a stall
// hits every request on the connections it carries.
//
// APIProxy works on HTTP: it terminates TLS with a certificate the client
// trusts and stalls only watch responses, so a client's lists, probes and
// writes keep flowing while its watches deliver nothing. That is the stall
// a pod can be given: all its in-cluster clients dial the one kubernetes
// Service address.
package faultproxy
