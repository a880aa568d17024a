package discovery

import (
	"context"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Sessions. Lake keeps no session state: the tenant comes from the bearer
// token on every call, and it is the one catalog a caller can see. The
// Flight SQL JDBC driver sends SetSessionOptions {"catalog": …} when its URL
// has catalog=, and ADBC reads the current catalog with GetSessionOptions,
// so:
//   - SetSessionOptions accepts "catalog" equal to the caller's tenant, and
//     refuses any other catalog with INVALID_ARGUMENT and a message naming
//     the caller's own (it says nothing about whether the other exists);
//     other option names are answered INVALID_NAME in the result, as the
//     spec asks. No option ever changes the tenant.
//   - GetSessionOptions answers {"catalog": <tenant>}.
//   - CloseSession answers CLOSED.

// sessionCatalog is the one session option lake knows.
const sessionCatalog = "catalog"

// SetSessionOptions implements flightsql.Server.
func (s *Service) SetSessionOptions(ctx context.Context, req *flight.SetSessionOptionsRequest) (*flight.SetSessionOptionsResult, error) {
	tenant, ok := TenantFrom(ctx)
	if !ok {
		return nil, errUnauthenticated
	}
	res := &flight.SetSessionOptionsResult{}
	for name, val := range req.GetSessionOptions() {
		if name != sessionCatalog {
			if res.Errors == nil {
				res.Errors = map[string]*flight.SetSessionOptionsResultError{}
			}
			res.Errors[name] = &flight.SetSessionOptionsResultError{Value: flight.SetSessionOptionsResultErrorInvalidName}
			continue
		}
		if got, ok := val.GetOptionValue().(*pb.SessionOptionValue_StringValue); !ok || got.StringValue != tenant {
			return nil, status.Errorf(codes.InvalidArgument,
				"session option %q: this token sees one catalog, %s; connect without catalog= or with catalog=%s",
				sessionCatalog, strconv.Quote(tenant), tenant)
		}
	}
	return res, nil
}

// GetSessionOptions implements flightsql.Server.
func (s *Service) GetSessionOptions(ctx context.Context, _ *flight.GetSessionOptionsRequest) (*flight.GetSessionOptionsResult, error) {
	tenant, ok := TenantFrom(ctx)
	if !ok {
		return nil, errUnauthenticated
	}
	return &flight.GetSessionOptionsResult{SessionOptions: map[string]*flight.SessionOptionValue{
		sessionCatalog: {OptionValue: &pb.SessionOptionValue_StringValue{StringValue: tenant}},
	}}, nil
}

// CloseSession implements flightsql.Server.
func (s *Service) CloseSession(ctx context.Context, _ *flight.CloseSessionRequest) (*flight.CloseSessionResult, error) {
	if _, ok := TenantFrom(ctx); !ok {
		return nil, errUnauthenticated
	}
	return &flight.CloseSessionResult{Status: flight.CloseSessionResultClosed}, nil
}

// Statements. Queries and prepared statements run read-only SQL over the
// caller's catalog (sql.go). Everything that would change something —
// updates, ingestion, transactions — and Substrait plans answer
// UNIMPLEMENTED with ErrNoStatements' message.

// ErrNoStatements is the answer to every statement command that is not a
// read-only query.
var ErrNoStatements = status.Error(codes.Unimplemented,
	"lake is a read-only table catalog: it answers SQL queries over information_schema (schemata, tables, columns), "+
		"SHOW TABLES, SHOW COLUMNS and DESCRIBE, and the Flight SQL metadata commands; it runs no updates, ingestion, "+
		"transactions or Substrait plans. Query a table's data with your engine at the location its registration names")

// PollFlightInfoStatement implements flightsql.Server.
func (s *Service) PollFlightInfoStatement(context.Context, flightsql.StatementQuery, *flight.FlightDescriptor) (*flight.PollInfo, error) {
	return nil, ErrNoStatements
}

// GetFlightInfoSubstraitPlan implements flightsql.Server.
func (s *Service) GetFlightInfoSubstraitPlan(context.Context, flightsql.StatementSubstraitPlan, *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return nil, ErrNoStatements
}

// GetSchemaSubstraitPlan implements flightsql.Server.
func (s *Service) GetSchemaSubstraitPlan(context.Context, flightsql.StatementSubstraitPlan, *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	return nil, ErrNoStatements
}

// CreatePreparedSubstraitPlan implements flightsql.Server.
func (s *Service) CreatePreparedSubstraitPlan(context.Context, flightsql.ActionCreatePreparedSubstraitPlanRequest) (flightsql.ActionCreatePreparedStatementResult, error) {
	return flightsql.ActionCreatePreparedStatementResult{}, ErrNoStatements
}

// DoPutCommandStatementUpdate implements flightsql.Server.
func (s *Service) DoPutCommandStatementUpdate(context.Context, flightsql.StatementUpdate) (int64, error) {
	return 0, ErrNoStatements
}

// DoPutCommandSubstraitPlan implements flightsql.Server.
func (s *Service) DoPutCommandSubstraitPlan(context.Context, flightsql.StatementSubstraitPlan) (int64, error) {
	return 0, ErrNoStatements
}

// DoPutPreparedStatementUpdate implements flightsql.Server.
func (s *Service) DoPutPreparedStatementUpdate(context.Context, flightsql.PreparedStatementUpdate, flight.MessageReader) (int64, error) {
	return 0, ErrNoStatements
}

// DoPutCommandStatementIngest implements flightsql.Server.
func (s *Service) DoPutCommandStatementIngest(context.Context, flightsql.StatementIngest, flight.MessageReader) (int64, error) {
	return 0, ErrNoStatements
}

// BeginTransaction implements flightsql.Server.
func (s *Service) BeginTransaction(context.Context, flightsql.ActionBeginTransactionRequest) ([]byte, error) {
	return nil, ErrNoStatements
}
