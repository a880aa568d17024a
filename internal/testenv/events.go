package testenv

import (
	"encoding/json"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// APIGatewayEvent is an API Gateway HTTP API (payload 2.0) event as IAM
// authorization delivers it, with body marshalled to JSON when not nil.
func APIGatewayEvent(method, path string, body any, callerARN string) events.APIGatewayV2HTTPRequest {
	ev := events.APIGatewayV2HTTPRequest{
		Version:  "2.0",
		RawPath:  path,
		Headers:  map[string]string{"content-type": "application/json"},
		RouteKey: "$default",
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			DomainName: "api.example.test",
			RequestID:  "req-1",
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path, SourceIP: "192.0.2.1"},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
				IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: callerARN, AccountID: "123456789012"},
			},
		},
	}
	if body != nil {
		b, _ := json.Marshal(body)
		ev.Body = string(b)
	}
	return ev
}

// ScheduledEvent is the EventBridge scheduled event that fires refresh.
func ScheduledEvent() events.CloudWatchEvent {
	return events.CloudWatchEvent{
		Version: "0", ID: "ev-1", DetailType: "Scheduled Event", Source: "aws.events", Time: time.Now(),
		Detail: json.RawMessage(`{}`),
	}
}
