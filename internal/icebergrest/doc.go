// Package icebergrest is the Iceberg REST catalog front-end of discovery,
// read side: an http.Handler that answers the Iceberg REST protocol
// (apache/iceberg open-api/rest-catalog-open-api.yaml) for one tenant per
// request from a Source the discovery core implements from memory. It does
// no I/O of its own.
//
// Served routes (prefix = the caller's tenant, given by /v1/config's
// overrides.prefix; each route is also answered without the prefix):
//
//	GET  /v1/config?warehouse=W
//	GET  /v1/{prefix}/namespaces                                  ?parent= ?pageToken= ?pageSize=
//	GET  /v1/{prefix}/namespaces/{namespace}
//	HEAD /v1/{prefix}/namespaces/{namespace}
//	GET  /v1/{prefix}/namespaces/{namespace}/tables               ?pageToken= ?pageSize=
//	GET  /v1/{prefix}/namespaces/{namespace}/tables/{table}       ?snapshots=all|refs
//	HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}
//	GET  /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials
//
// Every other method is refused with 406 UnsupportedOperationException;
// every error is the spec's model {"error":{"message","type","code"}}.
//
// The tenant comes only from Options.Authenticate; a {prefix} naming any
// other tenant is 403, whether that tenant exists or not. Namespaces of lake
// are one level: a namespace path segment holding the unit separator (%1F,
// the spec's multi-level join) names no lake namespace and is 404.
//
// Listings are paged: a page token is opaque (base64url of the listing kind
// and the last name returned), a token that does not decode is 400. A page
// holds pageSize names (1 to MaxPageSize; larger is served as MaxPageSize);
// without pageSize it holds DefaultPageSize names when the client sent a
// pageToken (an empty one opts in to paging) and MaxPageSize names when it
// sent none, so a client that does not page still sees whole namespaces of
// up to MaxPageSize names and the next-page-token beyond.
package icebergrest
