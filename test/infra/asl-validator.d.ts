/** asl-validator 4 ships no type declarations; this is the part the infra tests call. */
declare module 'asl-validator' {
  interface ValidationResult {
    isValid: boolean;
    errors: { message?: string }[];
    errorsText(separator?: string): string;
  }
  export default function aslValidator(
    definition: unknown,
    options?: { checkPaths?: boolean; checkArn?: boolean },
  ): ValidationResult;
}
