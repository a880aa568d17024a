package flightclient

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lake-catalog/lake/pkg/wire"
)

func TestDescribe(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	desc := wire.TableDescription{Namespace: "sales", Table: "orders", TableType: "TABLE", Location: "s3://b/orders/",
		Version: 3, CreatedAt: at, UpdatedAt: at.Add(time.Hour), Description: "a\nb", Properties: map[string]string{"k": "v"}, HasSchema: true}
	body, err := json.Marshal(desc)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		results  [][]byte
		err      error
		wantCode codes.Code
		wantErr  bool
	}{
		{name: "found", results: [][]byte{body}},
		{name: "not found", err: status.Error(codes.NotFound, "describe: no table sales.orders"), wantCode: codes.NotFound},
		{name: "no result", wantErr: true},
		{name: "not JSON", results: [][]byte{[]byte("nope")}, wantErr: true},
		{name: "error after the result", results: [][]byte{body}, err: status.Error(codes.Internal, "boom"), wantCode: codes.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, c := startActionServer(t, tt.results, tt.err)

			got, err := c.Describe(context.Background(), "sales", "orders")
			a := <-srv.got
			var req wire.DescribeRequest
			if err := json.Unmarshal(a.Body, &req); err != nil || a.Type != wire.DescribeActionType ||
				req != (wire.DescribeRequest{Namespace: "sales", Table: "orders"}) {
				t.Fatalf("got action %q %s (%v), want %q for sales.orders", a.Type, a.Body, err, wire.DescribeActionType)
			}
			if got := <-srv.auth; !slices.Equal(got, []string{"Bearer tok"}) {
				t.Fatalf("got authorization %q, want the bearer token", got)
			}
			switch {
			case tt.wantCode != codes.OK:
				if status.Code(err) != tt.wantCode {
					t.Fatalf("got %v, want code %v", err, tt.wantCode)
				}
				return
			case tt.wantErr:
				if err == nil {
					t.Fatalf("got %+v, want an error", got)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if got.Namespace != desc.Namespace || got.Table != desc.Table || got.TableType != desc.TableType || got.Location != desc.Location ||
				got.Version != desc.Version || !got.CreatedAt.Equal(desc.CreatedAt) || !got.UpdatedAt.Equal(desc.UpdatedAt) ||
				got.Description != desc.Description || !maps.Equal(got.Properties, desc.Properties) || got.HasSchema != desc.HasSchema {
				t.Errorf("got %+v, want %+v", *got, desc)
			}
		})
	}
}
