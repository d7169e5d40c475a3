// Request schemas of the auth endpoints and the token pair they answer with.
import * as yup from 'yup';
import { constString, stringField } from '../http/response-fields';
import { maxChars, strictObject } from '../http/validate';
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
}).meta({
  description:
    'BUYER or SELLER (ADMIN cannot sign up). A SELLER needs a non-blank businessNumber (else 400 BUSINESS_NUMBER_REQUIRED); anyone else must leave it out, null or blank.',
  example: {
    email: 'new.buyer@example.com',
    password: 'Secret-pass-1',
    name: 'New Buyer',
    phone: '010-1234-5678',
    role: 'BUYER',
  },
  jsonSchema: {
    if: { properties: { role: { const: 'SELLER' } }, required: ['role'] },
    // These branches constrain businessNumber only; the other fields are the object's business.
    then: {
      required: ['businessNumber'],
      properties: { businessNumber: { type: 'string', pattern: '\\S' } },
      additionalProperties: true,
    },
    else: { properties: { businessNumber: { pattern: '^\\s*$' } }, additionalProperties: true },
  },
});
export type SignupInput = yup.InferType<typeof signupBody>;

export const loginBody = strictObject({
  // Login is lenient about the e-mail's format (a wrong one is simply INVALID_CREDENTIALS).
  email: emailText()
    .required('email is required')
    .test(maxChars(255, 'email must be at most 255 characters')),
  password: text().defined('password is required').max(1000, 'password is too long').meta({ verbatim: true }),
}).meta({
  description: 'The e-mail is matched case-insensitively.',
  example: { email: 'buyer@marketplace.test', password: 'Buyer123!' },
});
export type LoginInput = yup.InferType<typeof loginBody>;

export const refreshTokenBody = strictObject({
  refreshToken: text({ trim: true })
    .required('refreshToken is required')
    .max(4096, 'refreshToken is too long')
    .meta({ description: 'The refreshToken of the last login or refresh' }),
}).meta({ example: { refreshToken: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIzIn0.c2lnbmF0dXJl' } });

export const tokenPairShape = yup
  .object({
    accessToken: stringField().meta({ description: 'JWT for `Authorization: Bearer`' }),
    refreshToken: stringField().meta({
      description: 'Single-use JWT for POST /auth/refresh (rotated on every use)',
    }),
    tokenType: constString('Bearer'),
    expiresIn: yup
      .number()
      .oneOf([ACCESS_TOKEN_TTL_SECONDS])
      .defined()
      .meta({ description: 'Access token lifetime in seconds' }),
    refreshExpiresIn: yup
      .number()
      .oneOf([REFRESH_TOKEN_TTL_SECONDS])
      .defined()
      .meta({ description: 'Refresh token lifetime in seconds' }),
  })
  .noUnknown()
  .meta({
    component: 'TokenPair',
    example: {
      accessToken: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIzIiwicm9sZSI6IkJVWUVSIn0.c2lnbmF0dXJl',
      refreshToken: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIzIn0.c2lnbmF0dXJl',
      tokenType: 'Bearer',
      expiresIn: ACCESS_TOKEN_TTL_SECONDS,
      refreshExpiresIn: REFRESH_TOKEN_TTL_SECONDS,
    },
  });
export type TokenPair = yup.InferType<typeof tokenPairShape>;
