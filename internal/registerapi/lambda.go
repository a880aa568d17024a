package registerapi

import (
	"context"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
)

// LambdaHandler serves h to API Gateway HTTP API events (payload format
// 2.0). An event that cannot become an HTTP request is answered 400, never
// a Lambda error: a retry would not help.
func LambdaHandler(h http.Handler) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	adapter := httpadapter.NewV2(h)
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		resp, err := adapter.ProxyWithContext(ctx, ev)
		if err != nil {
			return events.APIGatewayV2HTTPResponse{
				StatusCode: http.StatusBadRequest,
				Headers:    map[string]string{"Content-Type": "application/json"},
				Body:       `{"error":{"code":"invalid_request","message":"the request could not be read"}}`,
			}, nil
		}
		return resp, nil
	}
}

// IAMCaller names the IAM principal API Gateway authorized for r (its ARN),
// or "" when the request did not come through API Gateway's IAM auth.
func IAMCaller(r *http.Request) string {
	rc, ok := core.GetAPIGatewayV2ContextFromContext(r.Context())
	if !ok || rc.Authorizer == nil || rc.Authorizer.IAM == nil {
		return ""
	}
	return rc.Authorizer.IAM.UserARN
}
