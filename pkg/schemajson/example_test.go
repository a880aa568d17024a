package schemajson_test

import (
	"fmt"

	"github.com/lake-catalog/lake/pkg/schemajson"
)

func ExampleParse() {
	s, err := schemajson.Parse([]byte(`{"fields": [
	  {"name": "id", "type": "int64", "nullable": false},
	  {"name": "ts", "type": {"name": "timestamp", "unit": "us", "timezone": "UTC"}}
	]}`))
	if err != nil {
		panic(err)
	}
	for _, f := range s.Fields() {
		fmt.Println(f.Name, f.Type, f.Nullable)
	}
	// Output:
	// id int64 false
	// ts timestamp[us, tz=UTC] true
}
