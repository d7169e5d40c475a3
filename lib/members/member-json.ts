// Member JSON of API.md: `{ id, email, name, phone, role, businessNumber, createdAt, updatedAt }`.
import type { JsonSchema } from '../http/route';
import type { Member } from './member-model';

export interface MemberJson {
  id: number;
  email: string;
  name: string;
  phone: string;
  role: Member['role'];
  businessNumber: string | null;
  createdAt: string;
  updatedAt: string;
}

export function toMemberJson(member: Member): MemberJson {
  return {
    id: member.id,
    email: member.email,
    name: member.name,
    phone: member.phone,
    role: member.role,
    businessNumber: member.businessNumber ?? null,
    createdAt: member.createdAt.toISOString(),
    updatedAt: member.updatedAt.toISOString(),
  };
}

export const MEMBER_JSON_SCHEMA: JsonSchema = {
  type: 'object',
  required: ['id', 'email', 'name', 'phone', 'role', 'businessNumber', 'createdAt', 'updatedAt'],
  additionalProperties: false,
  properties: {
    id: { type: 'integer' },
    email: { type: 'string', format: 'email' },
    name: { type: 'string' },
    phone: { type: 'string' },
    role: { type: 'string', enum: ['BUYER', 'SELLER', 'ADMIN'] },
    businessNumber: { type: ['string', 'null'], description: 'Business registration number (sellers only)' },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
};
