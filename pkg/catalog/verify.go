package catalog

// VerifySchemaMessage checks the structure of an encapsulated Arrow IPC
// schema message (the first message of an IPC stream, or a table's schema)
// before arrow-go's reader sees it: every vector length and offset bounded
// by the bytes, the nesting depth bounded. Readers of untrusted IPC streams
// (the snapshot blob's segments) call it first.
func VerifySchemaMessage(b []byte) error { return verifySchemaMessage(b) }
