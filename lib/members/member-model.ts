// The members table as an Objection model. The password hash never leaves the service layer:
// responses go through toMemberJson(), which names every field it emits.
import type { Role } from '../config';
import { BaseModel } from '../db';

export class Member extends BaseModel {
  static tableName = 'members';

  id!: number;
  email!: string;
  passwordHash!: string;
  name!: string;
  phone!: string;
  role!: Role;
  businessNumber!: string | null;
  /** Bumped on a password change; access tokens carry it (`ver`) and stop working when it moves on. */
  tokenVersion!: number;
  createdAt!: Date;
  updatedAt!: Date;
}
