package icebergschema_test

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lake-catalog/lake/pkg/icebergschema"
)

func Example() {
	v1 := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	}, nil)
	ids1 := icebergschema.Assign(nil, icebergschema.FieldIDs{}, v1)
	fmt.Println(icebergschema.Paths(v1), ids1.IDs, ids1.LastColumnID)

	// The next version drops tags and adds a struct: id keeps its id.
	v2 := arrow.NewSchema([]arrow.Field{
		{Name: "customer", Type: arrow.StructOf(arrow.Field{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	ids2 := icebergschema.Assign(v1, ids1, v2)
	fmt.Println(icebergschema.Paths(v2), ids2.IDs, ids2.LastColumnID)

	s, err := icebergschema.ToIceberg(v2, ids2, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s)
	nm, _ := icebergschema.NameMapping(v2, ids2)
	fmt.Println(string(nm))

	_, err = icebergschema.ToIceberg(arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Uint64}}, nil),
		icebergschema.FieldIDs{IDs: []int32{1}, LastColumnID: 1}, 0)
	fmt.Println(err)
	// Output:
	// [id tags tags.element] [1 2 3] 3
	// [customer customer.name id] [4 5 1] 5
	// table {
	// 	4: customer: optional struct<5: name: optional string>
	// 	1: id: required long
	// }
	// [{"names":["customer"],"field-id":4,"fields":[{"names":["name"],"field-id":5}]},{"names":["id"],"field-id":1}]
	// icebergschema: column "n": Arrow type uint64 has no Iceberg v2 type (its values above 2^63-1 fit no Iceberg integer)
}
