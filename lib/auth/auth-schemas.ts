// Request schemas of the auth endpoints and the JSON Schema of the token response.
import * as yup from 'yup';
import type { JsonSchema } from '../http/route';
import { strictObject } from '../http/validate';
import {
  businessNumberField,
  emailField,
  emailText,
  nameField,
  newPasswordField,
  phoneField,
  text,
} from '../members/member-schemas';
import { ACCESS_TOKEN_TTL_SECONDS, REFRESH_TOKEN_TTL_SECONDS } from './tokens';

export const signupBody = strictObject({
  // defined() rather than required() below: a blank value gets one message (from the field rule), not two.
  email: emailField().required('email is required'),
  password: newPasswordField().defined('password is required'),
  name: nameField().defined('name is required'),
  phone: phoneField().defined('phone is required'),
  // ADMIN accounts are never self-service: only the seed (or an operator) creates them.
  role: text().required('role is required').oneOf(['BUYER', 'SELLER'], 'role must be BUYER or SELLER'),
  businessNumber: businessNumberField().nullable().optional(),
});
export type SignupInput = yup.InferType<typeof signupBody>;

export const loginBody = strictObject({
  // Login is lenient about the e-mail's format (a wrong one is simply INVALID_CREDENTIALS).
  email: emailText().required('email is required').max(255, 'email must be at most 255 characters'),
  password: text().defined('password is required').max(1000, 'password is too long'),
});
export type LoginInput = yup.InferType<typeof loginBody>;

export const refreshTokenBody = strictObject({
  refreshToken: text({ trim: true })
    .required('refreshToken is required')
    .max(4096, 'refreshToken is too long'),
});

export const TOKEN_RESPONSE_SCHEMA: JsonSchema = {
  type: 'object',
  required: ['accessToken', 'refreshToken', 'tokenType', 'expiresIn', 'refreshExpiresIn'],
  additionalProperties: false,
  properties: {
    accessToken: { type: 'string', description: 'JWT for `Authorization: Bearer`' },
    refreshToken: {
      type: 'string',
      description: 'Single-use JWT for POST /auth/refresh (rotated on every use)',
    },
    tokenType: { const: 'Bearer' },
    expiresIn: { const: ACCESS_TOKEN_TTL_SECONDS, description: 'Access token lifetime in seconds' },
    refreshExpiresIn: { const: REFRESH_TOKEN_TTL_SECONDS, description: 'Refresh token lifetime in seconds' },
  },
};
