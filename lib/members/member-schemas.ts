// Request schemas of the member endpoints, and the field rules signup shares with them.
import * as yup from 'yup';
import { passwordByteLengthError } from '../auth/passwords';
import { maxChars, strictObject } from '../http/validate';
import { pageQueryFields } from '../http/pagination';
import { enumField, idField, pageShape, stringField, timeField } from '../http/response-fields';

/**
 * A string field that refuses other types instead of casting them (yup would turn 123 into "123").
 * Trimming and lower-casing happen here too: yup's own trim()/lowercase() transforms crash on non-strings.
 */
export const text = (options: { trim?: boolean; lowercase?: boolean } = {}) =>
  yup
    .string()
    .transform((_value, original) => {
      if (typeof original !== 'string') return original;
      const trimmed = options.trim ? original.trim() : original;
      return options.lowercase ? trimmed.toLowerCase() : trimmed;
    })
    .typeError('${path} must be a string');

/**
 * E-mails are stored and looked up normalised: trimmed, lower-cased and in Unicode NFC, and compared byte for
 * byte (utf8mb4_bin on MySQL), so two spellings of one address are one account and look-alikes are not.
 */
export const normalizeEmail = (email: string) => email.trim().toLowerCase().normalize('NFC');

/** An e-mail as typed, normalised (see normalizeEmail); format rules are up to the caller. */
export const emailText = () =>
  yup
    .string()
    .transform((_value, original) => (typeof original === 'string' ? normalizeEmail(original) : original))
    .typeError('${path} must be a string');

export const emailField = () =>
  emailText()
    .test(maxChars(255, 'email must be at most 255 characters'))
    .email('email must be a valid e-mail address');

/** A new password: 8-72 bytes of UTF-8 (bcrypt reads only 72), never trimmed. */
export const newPasswordField = () =>
  text()
    .test('password-bytes', 'password is invalid', (value, context) => {
      if (value === undefined) return true;
      const problem = passwordByteLengthError(value);
      return problem ? context.createError({ message: problem }) : true;
    })
    .meta({
      description:
        '8-72 bytes of UTF-8 (bcrypt reads only 72), counted in bytes: 8 ASCII characters at least, fewer multi-byte ones. Never trimmed.',
      // 72 bytes are at most 72 characters; 8 bytes are at least 2 characters (4-byte ones).
      jsonSchema: { minLength: 2, maxLength: 72 },
      // Hashed byte for byte as typed: a password set before NFC came in must still match.
      verbatim: true,
    });

export const nameField = () =>
  text({ trim: true })
    .min(1, 'name must not be blank')
    .test(maxChars(100, 'name must be at most 100 characters'));

export const phoneField = () =>
  text({ trim: true }).matches(
    /^[0-9+()\- ]{7,30}$/,
    'phone must be 7-30 characters of digits, spaces, +, -, ( or )',
  );

export const businessNumberField = () =>
  text({ trim: true })
    .test(maxChars(30, 'businessNumber must be at most 30 characters'))
    .meta({ description: 'Business registration number, at most 30 characters (trimmed); sellers only' });

export const ROLES = ['BUYER', 'SELLER', 'ADMIN'] as const;

export const updateMeBody = strictObject({
  name: nameField().optional(),
  phone: phoneField().optional(),
  businessNumber: businessNumberField().nullable().optional().meta({
    description:
      'Sellers only (anyone else: 400); a seller cannot blank it (400 BUSINESS_NUMBER_REQUIRED). At most 30 characters.',
  }),
  password: newPasswordField().optional(),
  currentPassword: text().optional().meta({
    description: 'The current password: required with password, and only with it (400 otherwise)',
    verbatim: true,
  }),
}).meta({
  description: 'Send only the fields to change; an empty object changes nothing.',
  example: { name: 'Demo Buyer', phone: '010-1234-5678' },
  // The member service refuses one of password/currentPassword without the other.
  jsonSchema: { dependentRequired: { password: ['currentPassword'], currentPassword: ['password'] } },
});
export type UpdateMeInput = yup.InferType<typeof updateMeBody>;

export const listMembersQuery = strictObject({
  role: text()
    .oneOf([...ROLES], 'role must be one of BUYER, SELLER, ADMIN')
    .optional()
    .meta({ description: 'Only members of this role' }),
  keyword: text({ trim: true })
    .test(maxChars(100, 'keyword must be at most 100 characters'))
    .optional()
    .meta({
      description:
        'Part of the e-mail or the name, case-insensitive as the product keyword (accents are letters of their own); % and _ match themselves',
      example: 'demo',
    }),
  ...pageQueryFields(),
});
export type ListMembersQuery = yup.InferType<typeof listMembersQuery>;

export const memberShape = yup
  .object({
    id: idField(),
    // No `format: email`: stored addresses are NFC and may hold non-ASCII letters (josé@...), which the
    // JSON Schema `email` format (ASCII only) would reject.
    email: stringField().meta({ description: 'Trimmed, lower-cased, NFC-normalised e-mail address' }),
    name: stringField(),
    phone: stringField(),
    role: enumField(ROLES),
    businessNumber: stringField()
      .nullable()
      .meta({ description: 'Business registration number (sellers only, else null)' }),
    createdAt: timeField(),
    updatedAt: timeField(),
  })
  .noUnknown()
  .meta({
    component: 'Member',
    example: {
      id: 3,
      email: 'buyer@marketplace.test',
      name: 'Demo Buyer',
      phone: '010-0000-0000',
      role: 'BUYER',
      businessNumber: null,
      createdAt: '2026-11-22T10:41:14.123Z',
      updatedAt: '2026-11-22T10:41:14.123Z',
    },
  });
export type MemberJson = yup.InferType<typeof memberShape>;

export const memberPageShape = pageShape(memberShape, 'MemberPage');
