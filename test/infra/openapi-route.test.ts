import { PUBLIC_ROUTES } from '@sluice/api';
import { describe, expect, it } from 'vitest';
import { logicalIdOf, synthesize } from './helpers.js';

interface Route {
  Properties: { RouteKey: string; AuthorizationType?: string; AuthorizerId?: unknown; Target: unknown };
}

/** The HTTP API's routes, by route key, with CORS on or off (CORS changes the proxy routes' methods). */
function routesOf(context: Record<string, unknown>) {
  const built = synthesize(context);
  const routes = Object.values(built.statelessTemplate.findResources('AWS::ApiGatewayV2::Route')) as Route[];
  return { built, routes: new Map(routes.map((route) => [route.Properties.RouteKey, route.Properties])) };
}

describe.each([
  ['CORS off', {}],
  ['CORS on', { corsOrigins: 'https://app.example.com' }],
])('the OpenAPI document route (%s)', (_name, context) => {
  const { built, routes } = routesOf(context);

  it('serves GET /v1/openapi.json and GET /api/v1/openapi.json without authorization, to the API function', () => {
    // Act
    const found = ['GET /v1/openapi.json', 'GET /api/v1/openapi.json'].map((key) => routes.get(key));
    const apiIntegration = Object.entries(
      built.statelessTemplate.findResources('AWS::ApiGatewayV2::Integration') as Record<
        string,
        { Properties: { IntegrationUri: unknown } }
      >,
    ).filter(([, integration]) =>
      JSON.stringify(integration.Properties.IntegrationUri).includes(
        logicalIdOf(built.stateless.functions.api),
      ),
    );

    // Assess
    expect(PUBLIC_ROUTES.map((route) => `${route.method} ${route.path}`).sort()).toEqual(
      ['GET /api/v1/openapi.json', 'GET /v1/openapi.json'].sort(),
    );
    expect(apiIntegration).toHaveLength(1);
    for (const route of found) {
      expect(route).toBeDefined();
      expect(route?.AuthorizationType).toBe('NONE');
      expect(route?.AuthorizerId).toBeUndefined();
      expect(route?.Target).toEqual({ 'Fn::Join': ['', ['integrations/', { Ref: apiIntegration[0]?.[0] }]] });
    }
  });

  it('keeps the authorizer on every other route', () => {
    // Act
    const others = [...routes].filter(([key]) => !key.endsWith('/openapi.json'));

    // Assess
    expect(others.length).toBeGreaterThanOrEqual(2);
    expect(others.map(([key]) => key)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/ \/v1\/\{proxy\+\}$/),
        expect.stringMatching(/ \/api\/v1\/\{proxy\+\}$/),
      ]),
    );
    for (const [key, route] of others) {
      expect(route.AuthorizationType, key).toBe('CUSTOM');
      expect(route.AuthorizerId, key).toBeDefined();
    }
  });
});
