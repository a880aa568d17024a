package wire

import "github.com/lake-catalog/lake/pkg/catalog"

// ListTablesActionType is the Flight action (DoAction) that answers one page
// of the caller's tenant's tables, in (namespace, name) order, all of them
// or one namespace's: a body {"namespace","offset","limit"} (JSON
// ListRequest), one Result, a JSON TablePage. Discovery reads only the
// page's rows of the tenant's prepared state, so a page of a tenant of
// many thousands of tables costs and carries a page, which GetTables (no
// offset or limit in Flight SQL) cannot do. The catalog browser pages with
// it.
const ListTablesActionType = "lake.list_tables"

// ListNamespacesActionType is the Flight action (DoAction) that answers one
// page of the caller's tenant's namespaces, sorted, each with its number
// of tables: a body {"offset","limit"} (JSON ListRequest, no namespace),
// one Result, a JSON NamespacePage.
const ListNamespacesActionType = "lake.list_namespaces"

// MaxListLimit is the most rows a list action answers per page.
const MaxListLimit = 500

// MaxListedDescription bounds a listed table's description: the first
// MaxListedDescription bytes, cut at a character boundary (Truncated says
// so); lake.describe answers it whole.
const MaxListedDescription = 240

// MaxListBody bounds a list action's body: a namespace escaped at most six
// bytes to a byte, two numbers, and the keys.
const MaxListBody = 6*catalog.MaxNameBytes + 256

// ListRequest is the body of a list action. Limit is 1 to MaxListLimit;
// Namespace, for ListTablesActionType only, picks one namespace (empty:
// every namespace).
type ListRequest struct {
	Namespace string `json:"namespace,omitempty"`
	Offset    int    `json:"offset"`
	Limit     int    `json:"limit"`
}

// ListedTable is one table of a TablePage.
type ListedTable struct {
	Namespace string `json:"namespace"`
	Table     string `json:"table"`
	TableType string `json:"table_type"`
	// Columns is the number of top-level columns; -1 when the table's
	// schema is unavailable (a legacy registration).
	Columns int `json:"columns"`
	// Description is the registration's, at most MaxListedDescription
	// bytes; DescriptionTruncated is set when it was cut.
	Description          string `json:"description,omitempty"`
	DescriptionTruncated bool   `json:"description_truncated,omitempty"`
}

// TablePage is the answer of ListTablesActionType: the caller's Tenant,
// Total tables matched, Tables from Offset on.
type TablePage struct {
	Tenant string        `json:"tenant"`
	Total  int           `json:"total"`
	Tables []ListedTable `json:"tables"`
}

// ListedNamespace is one namespace of a NamespacePage.
type ListedNamespace struct {
	Name   string `json:"name"`
	Tables int    `json:"tables"`
}

// NamespacePage is the answer of ListNamespacesActionType: the caller's
// Tenant, Total namespaces, Namespaces from Offset on.
type NamespacePage struct {
	Tenant     string            `json:"tenant"`
	Total      int               `json:"total"`
	Namespaces []ListedNamespace `json:"namespaces"`
}
