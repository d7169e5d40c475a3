// The health endpoints' response shapes.
import * as yup from 'yup';
import { constString, enumField } from '../http/response-fields';

export const livenessShape = yup
  .object({ status: constString('UP') })
  .noUnknown()
  .meta({ component: 'Liveness', example: { status: 'UP' } });

export const readinessShape = yup
  .object({
    status: enumField(['UP', 'DOWN'] as const),
    checks: yup
      .object({
        database: enumField(['UP', 'DOWN'] as const),
        migrations: enumField(['UP', 'PENDING', 'UNKNOWN'] as const),
      })
      .noUnknown()
      .defined(), // always sent (a yup object is optional by default)
  })
  .noUnknown()
  .meta({ component: 'Readiness', example: { status: 'UP', checks: { database: 'UP', migrations: 'UP' } } });
export type Readiness = yup.InferType<typeof readinessShape>;

/** The 503's body when the database cannot be reached (the migrations then cannot be checked). */
export const READINESS_DOWN_EXAMPLE: Readiness = {
  status: 'DOWN',
  checks: { database: 'DOWN', migrations: 'UNKNOWN' },
};
