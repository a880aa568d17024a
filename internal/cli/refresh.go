package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/spf13/cobra"

	"github.com/lake-catalog/lake/internal/apiclient"
	"github.com/lake-catalog/lake/pkg/catalog"
)

// RefreshOptions are `lake refresh`'s inputs.
type RefreshOptions struct {
	// IO receives the result line.
	IO IOStreams
	// APIClient returns local mode's API client acting as a tenant.
	APIClient func(ctx context.Context, tenant string) (*apiclient.Client, error)
	// AWSConfig loads the configuration the Lambda client is built from.
	AWSConfig func(ctx context.Context) (aws.Config, error)
	// Tenant is --tenant (default "admin").
	Tenant string
	// Function is the refresh Lambda to invoke; empty asks local mode's API.
	Function string
}

// NewCmdRefresh returns `lake refresh`. runF, when not nil, replaces
// refreshRun.
func NewCmdRefresh(f *Factory, runF func(context.Context, *RefreshOptions) error) *cobra.Command {
	opts := &RefreshOptions{}
	cmd := &cobra.Command{
		Use:   "refresh",
		Short: "Publish a new snapshot now (local mode's API, or the refresh Lambda with --function)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO, opts.APIClient, opts.AWSConfig, opts.Tenant = f.IO, f.APIClient, f.AWSConfig, f.Tenant
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return refreshRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Function, "function", f.Getenv("LAKE_REFRESH_FUNCTION"), "on AWS: the refresh Lambda's name or ARN, invoked with a scheduled event [LAKE_REFRESH_FUNCTION]")
	return cmd
}

func refreshRun(ctx context.Context, opts *RefreshOptions) error {
	if opts.Function != "" {
		return invokeRefresh(ctx, opts)
	}
	tenant := opts.Tenant
	if tenant == "" {
		tenant = "admin"
	}
	c, err := opts.APIClient(ctx, tenant)
	if err != nil {
		return err
	}
	res, err := c.Refresh(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "refresh: %s, generation %d, %d tables in %s\n", res.Outcome, res.Generation, res.TenantTables, res.Tenant)
	return nil
}

// invokeRefresh runs the deployed refresh Lambda once, synchronously, with
// the same event the schedule sends.
func invokeRefresh(ctx context.Context, opts *RefreshOptions) error {
	cfg, err := opts.AWSConfig(ctx)
	if err != nil {
		return err
	}
	payload, _ := json.Marshal(map[string]any{"version": "0", "detail-type": "Scheduled Event", "source": "aws.events", "detail": map[string]any{}})
	out, err := lambda.NewFromConfig(cfg).Invoke(ctx, &lambda.InvokeInput{FunctionName: &opts.Function, Payload: payload})
	if err != nil {
		return fmt.Errorf("invoke %s: %w", opts.Function, err)
	}
	if out.FunctionError != nil {
		return fmt.Errorf("refresh failed: %s", out.Payload)
	}
	var res apiclient.RefreshResult
	if err := json.Unmarshal(out.Payload, &res); err != nil {
		return fmt.Errorf("refresh answered %s: %w", out.Payload, err)
	}
	printRefresh(opts.IO.Out, res.Outcome, res.Generation, res.Counts)
	return nil
}

func printRefresh(w io.Writer, outcome string, generation uint64, c catalog.Counts) {
	fmt.Fprintf(w, "refresh: %s, generation %d, %d tables (%d without schema, %d skipped)\n",
		outcome, generation, c.Tables, c.SchemaUnavailable, c.Skipped)
}
