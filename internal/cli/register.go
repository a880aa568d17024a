package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/spf13/cobra"

	"github.com/lake-catalog/lake/internal/apiclient"
	"github.com/lake-catalog/lake/internal/parquetschema"
	"github.com/lake-catalog/lake/pkg/catalog"
	"github.com/lake-catalog/lake/pkg/schemadiff"
	"github.com/lake-catalog/lake/pkg/schemajson"
)

// RegisterOptions are `lake register`'s inputs.
type RegisterOptions struct {
	// IO receives the result line.
	IO IOStreams
	// APIClient returns the registration API client acting as a tenant.
	APIClient func(ctx context.Context, tenant string) (*apiclient.Client, error)
	// Tenant, Namespace and Table name the table (--tenant, -n, -t).
	Tenant, Namespace, Table string
	// Location (default: the Parquet file's folder) and TableType.
	Location, TableType string
	// Parquet, SchemaJSON and SchemaIPC are the schema's source files; exactly one is set.
	Parquet, SchemaJSON, SchemaIPC string
	// ColumnComments are --column-comment values, "column=text": each sets
	// the top-level column's ARROW:FLIGHT:SQL:REMARKS field metadata in the
	// schema registered (what JDBC's getColumns shows as REMARKS).
	ColumnComments []string
	// Description is --description: the table's description.
	Description string
	// Properties are --property values, "key=value" (repeatable).
	Properties []string
	// Compatibility is --compatibility: what later schema updates must
	// keep (none, backward, forward, full); empty leaves it to the
	// deployment's default.
	Compatibility string
	// Protected is --protected: refuse the table's drop until lake update
	// --unprotect.
	Protected bool
}

// refFlags adds --namespace and --table.
func refFlags(cmd *cobra.Command, ns, table *string) {
	cmd.Flags().StringVarP(ns, "namespace", "n", "", "namespace (Flight SQL db_schema)")
	cmd.Flags().StringVarP(table, "table", "t", "", "table name")
	_ = cmd.MarkFlagRequired("namespace")
	_ = cmd.MarkFlagRequired("table")
}

// NewCmdRegister returns `lake register`. runF, when not nil, replaces
// registerRun.
func NewCmdRegister(f *Factory, runF func(context.Context, *RegisterOptions) error) *cobra.Command {
	opts := &RegisterOptions{}
	cmd := &cobra.Command{
		Use:   "register",
		Short: "Register a table with its exact schema (from a Parquet file's footer, a JSON schema or IPC bytes)",
		Example: `  lake register --tenant acme -n sales -t orders --location s3://lake/sales/orders/ --parquet part-0.parquet \
      --column-comment "order_id=one per order" --column-comment "total=in EUR, tax included" \
      --description "Orders, one row per order" --property owner=team-sales --property retention=90d
  lake register --tenant acme -n sales -t events --location /data/events --schema-json events.schema.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO, opts.APIClient, opts.Tenant = f.IO, f.APIClient, f.Tenant
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return registerRun(cmd.Context(), opts)
		},
	}
	refFlags(cmd, &opts.Namespace, &opts.Table)
	fl := cmd.Flags()
	fl.StringVar(&opts.Location, "location", "", "where the table's data lives (URI or absolute path; default: the Parquet file's folder)")
	fl.StringVar(&opts.TableType, "table-type", "TABLE", "table type")
	schemaFlags(cmd, "schema", &opts.Parquet, &opts.SchemaJSON, &opts.SchemaIPC)
	fl.StringArrayVar(&opts.ColumnComments, "column-comment", nil, "column=text: a column's comment, stored as its ARROW:FLIGHT:SQL:REMARKS field metadata (repeatable)")
	fl.StringVar(&opts.Description, "description", "", fmt.Sprintf("the table's description (at most %d bytes; newlines and tabs allowed)", catalog.MaxDescriptionBytes))
	fl.StringArrayVar(&opts.Properties, "property", nil, fmt.Sprintf("key=value: a table property (repeatable; at most %d)", catalog.MaxProperties))
	fl.BoolVar(&opts.Protected, "protected", false, "protect the table: its drop is refused until lake update --unprotect")
	fl.StringVar(&opts.Compatibility, "compatibility", "", "what later schema updates must keep: none, backward (new readers read old data: new columns nullable, only promotions), forward (old readers read new data) or full (both); default: the deployment's default, none unless it sets one")
	return cmd
}

func registerRun(ctx context.Context, opts *RegisterOptions) error {
	ref, err := tableRef(opts.Tenant, opts.Namespace, opts.Table)
	if err != nil {
		return err
	}
	location := opts.Location
	if location == "" && opts.Parquet != "" {
		if location, err = filepath.Abs(filepath.Dir(opts.Parquet)); err != nil {
			return err
		}
	}
	props, err := parseProperties(opts.Properties)
	if err != nil {
		return err
	}
	mode, err := modeFlag("compatibility", opts.Compatibility)
	if err != nil {
		return err
	}
	schema, err := schemaFrom(opts.Parquet, opts.SchemaJSON, opts.SchemaIPC)
	if err != nil {
		return err
	}
	if schema, err = withColumnComments(schema, opts.ColumnComments); err != nil {
		return err
	}
	ipc, err := catalog.EncodeSchema(schema)
	if err != nil {
		return err
	}
	c, err := opts.APIClient(ctx, ref.Tenant)
	if err != nil {
		return err
	}
	t, created, err := c.Register(ctx, ref, apiclient.Spec{Location: location, TableType: opts.TableType, SchemaIPC: ipc,
		Description: opts.Description, Properties: props, Compatibility: string(mode), Protected: protectedFlag(opts.Protected)})
	if err != nil {
		return err
	}
	verb := "registered"
	if !created {
		verb = "already registered, identical"
	}
	fmt.Fprintf(opts.IO.Out, "%s %s/%s/%s (version %d, %d columns) at %s\n", verb, t.Tenant, t.Namespace, t.Name, t.Version, schema.NumFields(), t.Location)
	return nil
}

// schemaFlags adds --parquet, --schema-json and --schema-ipc, the three
// sources of a schema (what names the schema in their help: "schema",
// "new schema", …); schemaFrom reads the one given.
func schemaFlags(cmd *cobra.Command, what string, parquet, json, ipc *string) {
	fl := cmd.Flags()
	fl.StringVar(parquet, "parquet", "", "read the "+what+" from this Parquet file's footer")
	fl.StringVar(json, "schema-json", "", "read the "+what+" from this JSON schema file (see pkg/schemajson)")
	fl.StringVar(ipc, "schema-ipc", "", "read the "+what+" from this Arrow IPC schema file")
}

// modeFlag reads the compatibility mode given to --name: "" stays ""
// (the command's default: keep, or the table's own), anything else must
// be a mode.
func modeFlag(name, value string) (schemadiff.Mode, error) {
	if value == "" {
		return "", nil
	}
	m, err := schemadiff.ParseMode(value)
	if err != nil {
		return "", fmt.Errorf("--%s %q: want none, backward, forward or full", name, value)
	}
	return m, nil
}

// storedSchema reads ref's registration and its schema, nil when the
// registration stores none.
func storedSchema(ctx context.Context, c *apiclient.Client, ref catalog.TableRef) (apiclient.Table, *arrow.Schema, error) {
	t, err := c.Get(ctx, ref)
	if err != nil || t.SchemaIPC == nil {
		return t, nil, err
	}
	s, err := catalog.DecodeSchema(t.SchemaIPC)
	if err != nil {
		return t, nil, fmt.Errorf("%s: the stored schema does not decode: %w", ref, err)
	}
	return t, s, nil
}

// tableMode is a table's compatibility mode as the API answers it (absent
// for none).
func tableMode(t apiclient.Table) schemadiff.Mode {
	if t.Compatibility == "" {
		return schemadiff.None
	}
	return schemadiff.Mode(t.Compatibility)
}

// protectedFlag is --protected as the API client takes it: sent only when
// set.
func protectedFlag(on bool) *bool {
	if !on {
		return nil
	}
	return &on
}

// parseProperties reads --property values, "key=value" each (the value may
// be empty and may hold "="), into a map; nil when there are none. A value
// without "=", an empty key and a key given twice are errors; the limits on
// keys and values are the registration API's to check.
func parseProperties(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	props := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok:
			return nil, fmt.Errorf("--property %q: want key=value", kv)
		case k == "":
			return nil, fmt.Errorf("--property %q: the key is empty", kv)
		}
		if _, dup := props[k]; dup {
			return nil, fmt.Errorf("--property: key %q is given twice", k)
		}
		props[k] = v
	}
	return props, nil
}

// schemaFrom reads a schema from exactly one of the three sources.
func schemaFrom(parquetPath, jsonPath, ipcPath string) (*arrow.Schema, error) {
	set := 0
	for _, p := range []string{parquetPath, jsonPath, ipcPath} {
		if p != "" {
			set++
		}
	}
	if set != 1 {
		return nil, errors.New("give exactly one of --parquet, --schema-json and --schema-ipc")
	}
	switch {
	case parquetPath != "":
		return parquetschema.FromFile(parquetPath)
	case jsonPath != "":
		b, err := os.ReadFile(jsonPath)
		if err != nil {
			return nil, err
		}
		return schemajson.Parse(b)
	}
	b, err := os.ReadFile(ipcPath)
	if err != nil {
		return nil, err
	}
	return catalog.DecodeSchema(b)
}

// withColumnComments returns schema with each "column=text" comment set as
// that top-level column's ARROW:FLIGHT:SQL:REMARKS field metadata (other
// metadata kept). A column named twice, a column the schema lacks and an
// empty comment are errors.
func withColumnComments(schema *arrow.Schema, comments []string) (*arrow.Schema, error) {
	if len(comments) == 0 {
		return schema, nil
	}
	fields := schema.Fields()
	seen := map[string]bool{}
	for _, c := range comments {
		name, text, ok := strings.Cut(c, "=")
		switch {
		case !ok || name == "":
			return nil, fmt.Errorf("--column-comment %q: want column=text", c)
		case text == "":
			return nil, fmt.Errorf("--column-comment %q: the comment is empty", c)
		case seen[name]:
			return nil, fmt.Errorf("--column-comment: column %q is named twice", name)
		}
		seen[name] = true
		idx := schema.FieldIndices(name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("--column-comment: the schema has no column %q", name)
		}
		f := &fields[idx[0]]
		keys, vals := f.Metadata.Keys(), f.Metadata.Values()
		if i := f.Metadata.FindKey(flightsql.RemarksKey); i >= 0 {
			vals = slices.Clone(vals)
			vals[i] = text
		} else {
			keys, vals = append(slices.Clone(keys), flightsql.RemarksKey), append(slices.Clone(vals), text)
		}
		f.Metadata = arrow.NewMetadata(keys, vals)
	}
	md := schema.Metadata()
	return arrow.NewSchema(fields, &md), nil
}
