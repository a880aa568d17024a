// Package icebergschema gives a table's exact Arrow schema the field ids
// Iceberg needs, keeps them stable from one schema version to the next,
// and writes the schema as Iceberg's (format version 2) with them: what
// lake serves over the Iceberg REST protocol.
//
// # Paths and ids
//
// Every field has an id, a list's element and a map's key and value
// included. Fields are named by their path as package schemadiff spells
// it: dotted ("customer.address.zip"), a list's element "element"
// ("tags.element"), a map's key and value "key" and "value"
// ("attrs.value"). Paths lists them in depth-first pre-order (a field,
// then the fields nested in it, then its next sibling), and FieldIDs
// records the ids in that order with the table's last-column-id.
//
// Assign gives the ids of a schema version from the previous one's:
//
//   - the first version numbers its fields 1 to N in Paths order;
//   - a field whose path was in the previous version, with the same shape,
//     keeps its id: reordering fields, adding and removing others, moving
//     nothing but its nullability or its metadata keeps it;
//   - every other field is new and gets the next id after the table's
//     last-column-id, in Paths order: a field added, one whose path
//     changed (renamed, moved into or out of a struct), one whose shape
//     changed, and one removed and added back (its old id is never given
//     again: files written with it may still hold the old column);
//   - the last-column-id is the highest id ever given; it never decreases.
//
// Fields match by name at each level, the n-th of a name with the n-th
// of the same name, as schemadiff matches them. The ids are recorded with
// each schema version (pkg/catalog stores them with the registration),
// so every task, restart and refresh serves the same ones.
//
// A field's shape is the Iceberg type it maps to, with the Arrow encodings
// of one type and the types Iceberg promotes one into another as one:
//
//	integer       int8 … int64, uint8 … uint64 (int to long is a promotion)
//	floating      float16, float32, float64 (float to double)
//	decimal       any width and precision of the same scale
//	string        string, large_string, string_view
//	binary        binary, large_binary, binary_view
//	fixed[n]      fixed_size_binary(n)
//	uuid          the arrow.uuid extension
//	boolean, date (date32, date64), time (time32, time64)
//	timestamp     a timestamp without time zone, any unit
//	timestamptz   a timestamp with a time zone, any unit
//	struct, list (every list type), map: the kind alone; the fields
//	              nested in it are matched on their own
//	anything else the exact Arrow type
//
// A dictionary's shape is its value type's. So int32 to int64 keeps the
// id, int64 to string or a struct to an int is a new field.
//
// # Types
//
// ToIceberg maps each Arrow type to an Iceberg v2 type; a nullable field is
// optional, a non-nullable one required; a field's "comment" metadata (or
// else its "doc") is its doc.
//
//	Arrow                                          Iceberg
//	bool                                           boolean
//	int8, int16, int32, uint8, uint16              int
//	int64, uint32                                  long
//	uint64                                         refused (values above 2^63-1)
//	float16                                        refused
//	float32                                        float
//	float64                                        double
//	decimal32/64/128/256(p, s), 1 ≤ p ≤ 38, 0 ≤ s  decimal(p, s); other p or s refused
//	date32, date64                                 date
//	time32 (s, ms), time64 (us)                    time
//	time64 (ns)                                    refused (Iceberg time is microseconds)
//	timestamp (s, ms, us) without time zone        timestamp
//	timestamp (s, ms, us) with any time zone       timestamptz
//	timestamp (ns)                                 refused (timestamp_ns is format v3)
//	string, large_string, string_view              string
//	binary, large_binary, binary_view              binary
//	fixed_size_binary(n), n ≥ 1                    fixed[n]
//	arrow.uuid extension                           uuid
//	list, large_list, list_view, large_list_view,
//	fixed_size_list                                list
//	map                                            map
//	struct                                         struct
//	dictionary                                     its value type's
//	null, duration, interval, unions, run-end
//	encoded, other extensions                      refused
//
// A refusal is an *UnsupportedError naming the field's path and Arrow type.
// iceberg-go's own conversion (table.ArrowSchemaToIceberg) is more lenient
// where lake would lose values: it maps uint32 to int, uint64 to long and
// float16 to float; and stricter where it need not be: it refuses time32
// and time zones other than UTC's aliases (an Arrow timestamp with a time
// zone holds UTC instants whatever the zone).
//
// NameMapping writes the table's default name mapping
// (schema.name-mapping.default) with the same ids, for data files written
// without field ids.
package icebergschema
