package catalog

// EncodeBlobV1 writes format version 1, for fixtures of older refreshes.
var EncodeBlobV1 = encodeBlobV1
