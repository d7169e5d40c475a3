// Member JSON of API.md, typed by the one member shape (member-schemas.ts).
import type { Member } from './member-model';
import type { MemberJson } from './member-schemas';

export type { MemberJson };

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
