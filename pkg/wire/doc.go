// Package wire is lake's own protocol: on top of Arrow Flight SQL, the names
// of the Flight actions discovery answers (DoAction) with their JSON request
// and answer bodies and the bounds on them, lake's custom SqlInfo ids, and
// TypeString, the one exact spelling of an Arrow type that every surface
// (lake.search's columns, the catalog browser, lake show) prints; and the
// registration HTTP API's request and answer bodies (register.go), with
// the error envelope and the error codes every lake HTTP API answers
// (errors.go).
//
// Both sides import it: the servers (internal/discovery,
// internal/registerapi) answer with these types, and their clients
// (internal/flightclient, internal/apiclient, the catalog browser, the lake
// command) ask with them, so no client imports a server, as arrow-go keeps
// its flight and flightsql protocol types apart from any server. It lives
// under pkg/ rather than internal/ because it is the contract a client
// library outside this module needs to speak lake's protocol, and it
// imports nothing of internal/ (functions/deps_test.go checks it); it holds
// types and constants only, no server or client code.
//
// Everything else on the wire is standard Flight SQL: tickets are the
// Flight SQL commands arrow-go's flightsql client builds and reads, and lake
// adds no ticket forms of its own.
//
// The JSON shapes are part of the protocol: a field is never renamed or
// removed, and a new one is optional (omitempty on answers; a request with
// an unknown field is INVALID_ARGUMENT).
package wire
